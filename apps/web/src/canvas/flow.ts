// keyflow.pipeline/v1 document → React Flow nodes and edges. Framework-free (types only from
// @xyflow/react) so it is unit-tested without a browser.
//
// Vocabulary:
// - a *port* is a named input or output of an operator (spec.inputs / spec.outputs); in React Flow
//   it is a *handle*, and the handle id IS the port id (`in`, `reference`, `out`, `late`, `errors`).
// - an *edge end* in the document is `nodeId` (the main port: `out` when leaving, `in` when
//   entering) or `nodeId:port`.
// - a port an edge names but the spec does not declare (a typo, an unknown operator type) is still
//   drawn, flagged `declared: false`, so the canvas shows the document as it is and the validator's
//   issue points at something visible.
import type { Edge, Node, XYPosition } from "@xyflow/react";
import { parseEdgeEnd, type PipelineDocumentInput, type PortKinds, type StreamKind } from "@keyflow/operators";
import type { OperatorView } from "../catalog/operator-view";
import type { NodeIssues } from "./issues";

export const MAIN_INPUT = "in";
export const MAIN_OUTPUT = "out";

/** The part of an operator's catalog entry the canvas reads. */
export type OperatorShape = Pick<OperatorView, "type" | "title" | "category" | "stateful" | "inputs" | "outputs">;
export type CatalogLookup = (type: string) => OperatorShape | undefined;

export interface PortHandle {
  id: string;
  label: string;
  /** A side output (`late`, `errors`, …): drawn apart from the main flow. */
  side: boolean;
  /** False when only an edge names this port: the spec does not know it. */
  declared: boolean;
  /**
   * Outputs: the kind of stream leaving the port, resolved through the graph for `same` ports
   * (a filter after a keyBy sends a keyed stream); absent while it depends on an unconnected input.
   */
  kind?: StreamKind;
  /** Inputs: the kinds of stream the port takes. */
  accepts?: readonly StreamKind[];
  description?: string;
}

export interface ParamSummary {
  name: string;
  value: string;
}

export type OperatorNodeData = {
  nodeId: string;
  type: string;
  /** The spec's title, or the type when the catalog does not know it. */
  title: string;
  label?: string;
  /** The analyst's notes on the node (shown as a marker; edited in the inspector). */
  notes?: string;
  category: OperatorShape["category"] | "unknown";
  known: boolean;
  stateful: boolean;
  params: ParamSummary[];
  inputs: PortHandle[];
  outputs: PortHandle[];
  /** The validator's findings on this node, when there are any. */
  issues?: NodeIssues;
};

export type OperatorFlowNode = Node<OperatorNodeData, "operator">;

export type PipelineEdgeData = {
  sourcePort: string;
  targetPort: string;
  /** Leaves a side output: drawn dashed. */
  side: boolean;
};

export type PipelineFlowEdge = Edge<PipelineEdgeData>;

/** The stable id of an edge: its two ends as the document writes them. */
export function edgeId(from: string, to: string): string {
  return `${from}->${to}`;
}

const MAX_PARAMS = 3;
const MAX_VALUE_CHARS = 36;

/** The few params worth reading on the node itself: scalars first, in document order. */
export function summarizeParams(params: Record<string, unknown>, max = MAX_PARAMS): ParamSummary[] {
  const entries = Object.entries(params).filter(([, value]) => value !== undefined && value !== null);
  const scalar = entries.filter(([, value]) => typeof value !== "object");
  const nested = entries.filter(([, value]) => typeof value === "object");
  return [...scalar, ...nested].slice(0, max).map(([name, value]) => ({ name, value: formatParam(value) }));
}

function formatParam(value: unknown): string {
  let text: string;
  if (Array.isArray(value)) text = `[${value.length} item${value.length === 1 ? "" : "s"}]`;
  else if (typeof value === "object" && value !== null) text = `{${Object.keys(value).join(", ")}}`;
  else text = String(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS - 1)}…` : text;
}

interface PortUse {
  inputs: Set<string>;
  outputs: Set<string>;
}

/** Ports that the document's edges name, per node (so undeclared ones can still be drawn). */
function portsUsedByEdges(doc: PipelineDocumentInput): Map<string, PortUse> {
  const used = new Map<string, PortUse>();
  const useOf = (nodeId: string): PortUse => {
    let use = used.get(nodeId);
    if (!use) {
      use = { inputs: new Set(), outputs: new Set() };
      used.set(nodeId, use);
    }
    return use;
  };
  for (const edge of doc.edges ?? []) {
    const from = parseEdgeEnd(edge.from);
    const to = parseEdgeEnd(edge.to);
    useOf(from.nodeId).outputs.add(from.port ?? MAIN_OUTPUT);
    useOf(to.nodeId).inputs.add(to.port ?? MAIN_INPUT);
  }
  return used;
}

type DeclaredPort = OperatorShape["inputs"][number] | OperatorShape["outputs"][number];

function portFacts(port: DeclaredPort, resolved: Readonly<Record<string, StreamKind>> | undefined): Pick<PortHandle, "kind" | "accepts" | "description"> {
  const facts: Pick<PortHandle, "kind" | "accepts" | "description"> = {};
  if ("accepts" in port) facts.accepts = port.accepts;
  if ("kind" in port) {
    const kind = port.kind === "same" ? resolved?.[port.id] : port.kind;
    if (kind) facts.kind = kind;
  }
  if (port.description !== undefined) facts.description = port.description;
  return facts;
}

function handlesFor(declared: readonly DeclaredPort[], used: ReadonlySet<string>, kinds?: Readonly<Record<string, StreamKind>>): PortHandle[] {
  const handles: PortHandle[] = declared.map((port) => ({
    id: port.id,
    label: port.label,
    side: ("side" in port && port.side) || false,
    declared: true,
    ...portFacts(port, kinds),
  }));
  for (const id of used) {
    if (!handles.some((h) => h.id === id)) handles.push({ id, label: id, side: false, declared: false });
  }
  return handles;
}

export function toNodeData(
  node: PipelineDocumentInput["nodes"][number],
  spec: OperatorShape | undefined,
  used: PortUse | undefined,
  issues?: NodeIssues,
  kinds?: Readonly<Record<string, StreamKind>>,
): OperatorNodeData {
  const usedInputs = used?.inputs ?? new Set<string>();
  const usedOutputs = used?.outputs ?? new Set<string>();
  return {
    nodeId: node.id,
    type: node.type,
    title: spec?.title ?? node.type,
    ...(node.label ? { label: node.label } : {}),
    ...(node.notes ? { notes: node.notes } : {}),
    category: spec?.category ?? "unknown",
    known: spec !== undefined,
    stateful: spec?.stateful ?? false,
    params: summarizeParams(node.params ?? {}),
    inputs: handlesFor(spec?.inputs ?? [], usedInputs),
    outputs: handlesFor(spec?.outputs ?? [], usedOutputs, kinds),
    ...(issues ? { issues } : {}),
  };
}

export interface FlowGraph {
  nodes: OperatorFlowNode[];
  edges: PipelineFlowEdge[];
}

export interface FlowOptions {
  /** Overrides the document's positions (e.g. from auto-layout). */
  positions?: ReadonlyMap<string, XYPosition>;
  /** The validator's issues per node (see issuesByNode), pinned on the nodes. */
  issues?: ReadonlyMap<string, NodeIssues>;
  /** Resolved stream kinds per node and output port (resolvePortKinds), for `same` outputs. */
  portKinds?: PortKinds;
}

/**
 * Draws a document. A node with no position (in `opts.positions` or the document) is put at the
 * origin, so callers lay out first when `missingPositions(doc)` is not empty.
 */
export function documentToFlow(doc: PipelineDocumentInput, lookup: CatalogLookup, opts: FlowOptions = {}): FlowGraph {
  const used = portsUsedByEdges(doc);
  const nodes: OperatorFlowNode[] = doc.nodes.map((node) => ({
    id: node.id,
    type: "operator",
    position: opts.positions?.get(node.id) ?? node.position ?? { x: 0, y: 0 },
    data: toNodeData(node, lookup(node.type), used.get(node.id), opts.issues?.get(node.id), opts.portKinds?.[node.id]),
  }));
  const sideOutputs = new Map(nodes.map((n) => [n.id, new Set(n.data.outputs.filter((p) => p.side).map((p) => p.id))]));
  const edges: PipelineFlowEdge[] = (doc.edges ?? []).map((edge) => {
    const from = parseEdgeEnd(edge.from);
    const to = parseEdgeEnd(edge.to);
    const sourcePort = from.port ?? MAIN_OUTPUT;
    const targetPort = to.port ?? MAIN_INPUT;
    const side = sideOutputs.get(from.nodeId)?.has(sourcePort) ?? false;
    return {
      id: edgeId(edge.from, edge.to),
      source: from.nodeId,
      sourceHandle: sourcePort,
      target: to.nodeId,
      targetHandle: targetPort,
      ...(side ? { className: "kf-edge-side" } : {}),
      data: { sourcePort, targetPort, side },
    };
  });
  return { nodes, edges };
}

/** Ids of the nodes that have no position in the document. */
export function missingPositions(doc: PipelineDocumentInput): string[] {
  return doc.nodes.filter((n) => n.position === undefined).map((n) => n.id);
}
