// The difference between two pipeline documents (two versions, a version and the draft, the
// deployed version and what a deploy would ship). Framework-free: the version history, the diff
// view and the deploy button read it, and it is unit-tested without a browser.
//
// - Nodes are matched by id (node ids name state in checkpoints, so an id is a node's identity).
//   A node in both documents is *changed* when its type, spec version, label, notes or params
//   differ; positions are layout, never a change.
// - Params are compared as written (`"2m"` and `120000` differ): the diff shows what the analyst
//   wrote. Objects are compared field by field (`assignments.risk`); arrays and scalars as a whole.
// - Edges are matched by their two ends with the main ports made explicit, so `vel -> out` and
//   `vel:out -> out:in` are the same edge.
import { parseEdgeEnd, type PipelineDocumentInput } from "@keyflow/operators";

type DocNode = PipelineDocumentInput["nodes"][number];
type DocEdge = { from: string; to: string };

export type ChangeKind = "param" | "type" | "version" | "label" | "notes";

export interface ParamChange {
  kind: ChangeKind;
  /** Param path within the node (`windowMs`, `assignments.risk`); for the other kinds, the kind itself. */
  path: string;
  /** Undefined: absent on that side. */
  before: unknown;
  after: unknown;
}

export interface NodeChange {
  id: string;
  type: string;
  changes: ParamChange[];
}

export interface EdgeRef {
  /** The edge as the document writes it. */
  from: string;
  to: string;
  /** Both ends with explicit ports (`vel:out->alerts:in`): the edge's identity. */
  key: string;
}

export interface SettingChange {
  path: string;
  before: unknown;
  after: unknown;
}

export interface PipelineDiff {
  addedNodes: DocNode[];
  removedNodes: DocNode[];
  changedNodes: NodeChange[];
  unchangedNodeIds: string[];
  addedEdges: EdgeRef[];
  removedEdges: EdgeRef[];
  /** Pipeline settings (checkpointing, parallelism, …) and the description. */
  settings: SettingChange[];
}

// ---- values ----------------------------------------------------------------------------------

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Canonical JSON (sorted keys, undefined members dropped): equal values give equal text. */
export function canonical(value: unknown): string {
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return `[${value.map((v: unknown) => (v === undefined ? "null" : canonical(v))).join(",")}]`;
  if (isPlainObject(value)) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? String(value);
}

const same = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);

/** Field-by-field differences of two values; objects recurse, anything else is compared whole. */
export function valueChanges(before: unknown, after: unknown, path = ""): { path: string; before: unknown; after: unknown }[] {
  if (same(before, after)) return [];
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return keys.flatMap((k) => valueChanges(before[k], after[k], path ? `${path}.${k}` : k));
  }
  return [{ path, before, after }];
}

// ---- edges -----------------------------------------------------------------------------------

/** `vel` → `vel:out` (leaving) / `vel:in` (entering); explicit ports stay as they are. */
export function explicitEnd(end: string, side: "from" | "to"): string {
  const { nodeId, port } = parseEdgeEnd(end);
  return `${nodeId}:${port ?? (side === "from" ? "out" : "in")}`;
}

export function edgeKey(edge: DocEdge): string {
  return `${explicitEnd(edge.from, "from")}->${explicitEnd(edge.to, "to")}`;
}

function edgeRefs(edges: readonly DocEdge[] | undefined): Map<string, EdgeRef> {
  const out = new Map<string, EdgeRef>();
  for (const e of edges ?? []) {
    const key = edgeKey(e);
    if (!out.has(key)) out.set(key, { from: e.from, to: e.to, key });
  }
  return out;
}

// ---- nodes -----------------------------------------------------------------------------------

export function nodeChanges(a: DocNode, b: DocNode): ParamChange[] {
  const changes: ParamChange[] = [];
  if (a.type !== b.type) changes.push({ kind: "type", path: "type", before: a.type, after: b.type });
  if (a.version !== b.version) changes.push({ kind: "version", path: "version", before: a.version, after: b.version });
  if ((a.label ?? "") !== (b.label ?? "")) changes.push({ kind: "label", path: "label", before: a.label, after: b.label });
  if ((a.notes ?? "") !== (b.notes ?? "")) changes.push({ kind: "notes", path: "notes", before: a.notes, after: b.notes });
  for (const c of valueChanges(a.params ?? {}, b.params ?? {})) changes.push({ kind: "param", ...c });
  return changes;
}

/** What changed from `a` (older) to `b` (newer). */
export function diffPipelines(a: PipelineDocumentInput, b: PipelineDocumentInput): PipelineDiff {
  const before = new Map(a.nodes.map((n) => [n.id, n]));
  const after = new Map(b.nodes.map((n) => [n.id, n]));
  const addedNodes: DocNode[] = [];
  const changedNodes: NodeChange[] = [];
  const unchangedNodeIds: string[] = [];
  for (const node of after.values()) {
    const old = before.get(node.id);
    if (!old) {
      addedNodes.push(node);
      continue;
    }
    const changes = nodeChanges(old, node);
    if (changes.length > 0) changedNodes.push({ id: node.id, type: node.type, changes });
    else unchangedNodeIds.push(node.id);
  }
  const removedNodes = [...before.values()].filter((n) => !after.has(n.id));

  const edgesBefore = edgeRefs(a.edges);
  const edgesAfter = edgeRefs(b.edges);
  const addedEdges = [...edgesAfter.values()].filter((e) => !edgesBefore.has(e.key));
  const removedEdges = [...edgesBefore.values()].filter((e) => !edgesAfter.has(e.key));

  const settings: SettingChange[] = [
    ...valueChanges(a.settings ?? {}, b.settings ?? {}).map((c) => ({ ...c, path: `settings.${c.path}` })),
    ...((a.description ?? "") !== (b.description ?? "") ? [{ path: "description", before: a.description, after: b.description }] : []),
  ];

  return { addedNodes, removedNodes, changedNodes, unchangedNodeIds, addedEdges, removedEdges, settings };
}

/**
 * How many changes a diff holds, as the deploy button counts them: one per added, removed or
 * changed node, one per added or removed edge, and one for any change of the settings.
 */
export function countChanges(diff: PipelineDiff): number {
  return diff.addedNodes.length + diff.removedNodes.length + diff.changedNodes.length + diff.addedEdges.length + diff.removedEdges.length + (diff.settings.length > 0 ? 1 : 0);
}

export function isEmptyDiff(diff: PipelineDiff): boolean {
  return countChanges(diff) === 0;
}

/** "3 changes", "1 change", "no changes". */
export function describeChangeCount(n: number): string {
  return n === 0 ? "no changes" : `${n} change${n === 1 ? "" : "s"}`;
}

// ---- decorations -----------------------------------------------------------------------------

export type DiffStatus = "added" | "removed" | "changed" | "unchanged";

export interface DiffDecorations {
  /**
   * Both documents in one: every node and edge of `b`, plus those only in `a` (removed), so the
   * canvas can draw removed ones ghosted where they were. Settings and name are `b`'s.
   */
  merged: PipelineDocumentInput;
  /** By node id. */
  nodes: Record<string, DiffStatus>;
  /** By edge id as the canvas names edges (`from->to` as the merged document writes them). */
  edges: Record<string, DiffStatus>;
  /** Changed nodes' changes, by node id. */
  changes: Record<string, ParamChange[]>;
  /** CSS classes for a status: `kf-diff kf-diff--added`, … (empty for unchanged). */
  className(status: DiffStatus): string;
}

export function diffClassName(status: DiffStatus): string {
  return status === "unchanged" ? "kf-diff kf-diff--unchanged" : `kf-diff kf-diff--${status}`;
}

/** The canvas's view of a diff: the merged graph and a status per node and edge. */
export function diffDecorations(a: PipelineDocumentInput, b: PipelineDocumentInput, diff: PipelineDiff = diffPipelines(a, b)): DiffDecorations {
  const nodes: Record<string, DiffStatus> = {};
  for (const id of diff.unchangedNodeIds) nodes[id] = "unchanged";
  for (const n of diff.addedNodes) nodes[n.id] = "added";
  for (const c of diff.changedNodes) nodes[c.id] = "changed";
  for (const n of diff.removedNodes) nodes[n.id] = "removed";

  const changes: Record<string, ParamChange[]> = {};
  for (const c of diff.changedNodes) changes[c.id] = c.changes;

  const added = new Set(diff.addedEdges.map((e) => e.key));
  const edges: Record<string, DiffStatus> = {};
  const mergedEdges: DocEdge[] = [];
  for (const e of edgeRefs(b.edges).values()) {
    mergedEdges.push({ from: e.from, to: e.to });
    edges[`${e.from}->${e.to}`] = added.has(e.key) ? "added" : "unchanged";
  }
  for (const e of diff.removedEdges) {
    mergedEdges.push({ from: e.from, to: e.to });
    edges[`${e.from}->${e.to}`] = "removed";
  }

  const merged: PipelineDocumentInput = { ...b, nodes: [...b.nodes, ...diff.removedNodes], edges: mergedEdges };
  return { merged, nodes, edges, changes, className: diffClassName };
}

/** Ids of the nodes of `b` that differ from `a` (added or changed): what the canvas marks as changed since a deploy. */
export function changedNodeIds(diff: PipelineDiff): string[] {
  return [...diff.addedNodes.map((n) => n.id), ...diff.changedNodes.map((c) => c.id)];
}

/** A value as one short line for the list of changes: `"2m"`, `5`, `{…}`, `(none)`. */
export function formatValue(value: unknown, max = 80): string {
  if (value === undefined) return "(none)";
  const text = typeof value === "string" ? JSON.stringify(value) : canonical(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
