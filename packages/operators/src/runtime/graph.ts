// Compiles a validated pipeline document into the job graph: each node with its spec and parsed
// params, its routes (output port -> downstream node inputs) and its watermark channels (the
// distinct upstream nodes), in a deterministic topological order.
import type { OperatorSpec } from "../core/spec";
import { parseEdgeEnd, type PipelineDocument } from "../pipeline/document";

export interface PipelineIssue {
  severity: "error" | "warning";
  nodeId?: string;
  param?: string;
  edge?: string;
  message: string;
}

/** A pipeline that cannot run; `issues` name the nodes, params and edges at fault. */
export class PipelineInvalidError extends Error {
  override readonly name = "PipelineInvalidError";
  constructor(readonly issues: readonly PipelineIssue[]) {
    const errors = issues.filter((i) => i.severity === "error");
    const describe = (i: PipelineIssue): string =>
      i.nodeId && !i.message.startsWith(`node "${i.nodeId}"`) ? `node "${i.nodeId}"${i.param ? ` param "${i.param}"` : ""}: ${i.message}` : i.message;
    super(`the pipeline is invalid: ${errors.map(describe).join("; ")}`);
  }
}

export type NodeRole = "source" | "operator" | "sink";

export interface Route {
  to: string;
  /** Input port on the downstream node (`in` unless the edge names one). */
  port: string;
  /** Index of this edge's upstream node among the downstream node's watermark channels. */
  channel: number;
}

export interface GraphNode {
  id: string;
  type: string;
  role: NodeRole;
  spec: OperatorSpec;
  /** Params parsed by the spec (defaults filled, migrated to the spec's version). */
  params: unknown;
  /** Output port -> where its records go, in document edge order. */
  routes: Map<string, Route[]>;
  /** Distinct upstream node ids, in document edge order: channel i is upstream[i]. */
  upstream: string[];
  connectedOutputs: Set<string>;
}

export interface JobGraph {
  nodes: Map<string, GraphNode>;
  /** Topological order; ties in document order. */
  order: string[];
}

export function compileGraph(doc: PipelineDocument, getSpec: (type: string) => OperatorSpec | undefined): JobGraph {
  const issues: PipelineIssue[] = [];
  const nodes = new Map<string, GraphNode>();
  for (const n of doc.nodes) {
    const spec = getSpec(n.type);
    if (!spec) {
      issues.push({ severity: "error", nodeId: n.id, message: `unknown operator type "${n.type}"` });
      continue;
    }
    let raw: Record<string, unknown> = n.params;
    if (n.version !== undefined && n.version < spec.version && spec.migrate) raw = spec.migrate(raw, n.version);
    const parsed = spec.params.safeParse(raw);
    if (!parsed.success) {
      for (const i of parsed.error.issues) issues.push({ severity: "error", nodeId: n.id, param: i.path.join(".") || undefined, message: i.message });
      continue;
    }
    const role: NodeRole = spec.category === "source" ? "source" : spec.category === "sink" ? "sink" : "operator";
    if (role === "operator" && !spec.create) {
      issues.push({ severity: "error", nodeId: n.id, message: `operator type "${n.type}" has no implementation the job can run` });
      continue;
    }
    nodes.set(n.id, { id: n.id, type: n.type, role, spec, params: parsed.data, routes: new Map(), upstream: [], connectedOutputs: new Set() });
  }
  for (const e of doc.edges) {
    const from = parseEdgeEnd(e.from);
    const to = parseEdgeEnd(e.to);
    const a = nodes.get(from.nodeId);
    const b = nodes.get(to.nodeId);
    if (!a || !b) {
      if (!doc.nodes.some((n) => n.id === from.nodeId) || !doc.nodes.some((n) => n.id === to.nodeId)) {
        issues.push({ severity: "error", edge: `${e.from} -> ${e.to}`, message: "the edge names a node that does not exist" });
      }
      continue;
    }
    const outPort = from.port ?? "out";
    const inPort = to.port ?? "in";
    let channel = b.upstream.indexOf(a.id);
    if (channel < 0) channel = b.upstream.push(a.id) - 1;
    const routes = a.routes.get(outPort) ?? [];
    routes.push({ to: b.id, port: inPort, channel });
    a.routes.set(outPort, routes);
    a.connectedOutputs.add(outPort);
  }
  if (issues.some((i) => i.severity === "error")) throw new PipelineInvalidError(issues);

  // Kahn's algorithm; among ready nodes, document order.
  const indegree = new Map<string, number>();
  for (const n of nodes.values()) indegree.set(n.id, n.upstream.length);
  const order: string[] = [];
  const ready = doc.nodes.map((n) => n.id).filter((id) => indegree.get(id) === 0);
  const position = new Map(doc.nodes.map((n, i) => [n.id, i]));
  while (ready.length > 0) {
    ready.sort((x, y) => (position.get(x) as number) - (position.get(y) as number));
    const id = ready.shift() as string;
    order.push(id);
    const n = nodes.get(id) as GraphNode;
    const seen = new Set<string>();
    for (const routes of n.routes.values()) {
      for (const r of routes) {
        if (seen.has(r.to)) continue;
        seen.add(r.to);
        const d = (indegree.get(r.to) as number) - 1;
        indegree.set(r.to, d);
        if (d === 0) ready.push(r.to);
      }
    }
  }
  if (order.length !== nodes.size) {
    const inCycle = [...nodes.keys()].filter((id) => !order.includes(id));
    throw new PipelineInvalidError([{ severity: "error", nodeId: inCycle[0], message: `the pipeline has a cycle through ${inCycle.map((id) => `"${id}"`).join(", ")}; records must flow from sources to sinks` }]);
  }
  return { nodes, order };
}
