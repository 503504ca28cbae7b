// Editing a keyflow.pipeline/v1 document: the operations behind the canvas, the palette, the
// inspector and the keyboard commands. Framework-free and pure: each takes a document and returns
// a new one (or the same object when nothing changed, so history can skip no-ops).
//
// Vocabulary (see flow.ts): an *edge end* is `nodeId` for the main port (`out` when leaving, `in`
// when entering) or `nodeId:port`; the document always writes main ports the short way, so an edge
// drawn from handle `out` to handle `in` is stored as `a -> b`, never `a:out -> b:in`.
import { canConnect, parseEdgeEnd, type ConnectResult, type PipelineDocument, type PipelineNode } from "@keyflow/operators";
import type { XYPosition } from "@xyflow/react";
import { edgeId, MAIN_INPUT, MAIN_OUTPUT } from "./flow";

export type Doc = PipelineDocument;

// ---- Edge ends ------------------------------------------------------------------------------

/** The document's spelling of a port: `node` for the main port, `node:port` otherwise. */
export function edgeEnd(nodeId: string, port: string | null | undefined, role: "from" | "to"): string {
  const main = role === "from" ? MAIN_OUTPUT : MAIN_INPUT;
  return !port || port === main ? nodeId : `${nodeId}:${port}`;
}

/** `{ nodeId, port }` with the main port made explicit. */
export function endPort(end: string, role: "from" | "to"): { nodeId: string; port: string } {
  const { nodeId, port } = parseEdgeEnd(end);
  return { nodeId, port: port ?? (role === "from" ? MAIN_OUTPUT : MAIN_INPUT) };
}

// ---- Node ids -------------------------------------------------------------------------------

const MAX_ID_BASE = 56;

/**
 * A readable id stem for an operator type: `velocity` → `velocity`, `source.kafka` →
 * `sourceKafka`, `window.tumbling` → `windowTumbling`. Node ids name state in checkpoints, so
 * they are plain identifiers (letters, digits, `_`, `-`; starting with a letter).
 */
export function nodeIdBase(type: string): string {
  const parts = type.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const camel = parts.map((p, i) => (i === 0 ? p.charAt(0).toLowerCase() + p.slice(1) : p.charAt(0).toUpperCase() + p.slice(1))).join("");
  const base = /^[A-Za-z]/.test(camel) ? camel : `node${camel}`;
  return base.slice(0, MAX_ID_BASE);
}

/** `base` when free, else `base2`, `base3`, … (the first free one). */
export function uniqueNodeId(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) {
    const id = `${base}${i}`;
    if (!taken.has(id)) return id;
  }
}

/** The stem of an existing id, for copies: `velocity2` → `velocity`. */
export function idStem(id: string): string {
  const stem = id.replace(/\d+$/, "");
  return /^[A-Za-z]/.test(stem) ? stem : id;
}

const idsOf = (doc: Doc): Set<string> => new Set(doc.nodes.map((n) => n.id));

// ---- Nodes ----------------------------------------------------------------------------------

const roundPosition = (p: XYPosition): XYPosition => ({ x: Math.round(p.x), y: Math.round(p.y) });

export interface NewNode {
  type: string;
  position: XYPosition;
  params?: Record<string, unknown>;
  label?: string;
  /** Preferred id; made unique. Default: from the type (nodeIdBase). */
  id?: string;
}

export function addNode(doc: Doc, node: NewNode): { doc: Doc; nodeId: string } {
  const nodeId = uniqueNodeId(node.id ?? nodeIdBase(node.type), idsOf(doc));
  const created: PipelineNode = {
    id: nodeId,
    type: node.type,
    params: node.params ?? {},
    position: roundPosition(node.position),
    ...(node.label ? { label: node.label } : {}),
  };
  return { doc: { ...doc, nodes: [...doc.nodes, created] }, nodeId };
}

/** Removes nodes (with every edge touching them) and edges, by React Flow edge id (`from->to`). */
export function removeElements(doc: Doc, remove: { nodes?: Iterable<string>; edges?: Iterable<string> }): Doc {
  const nodes = new Set(remove.nodes ?? []);
  const edges = new Set(remove.edges ?? []);
  if (nodes.size === 0 && edges.size === 0) return doc;
  const keptNodes = doc.nodes.filter((n) => !nodes.has(n.id));
  const keptEdges = doc.edges.filter((e) => !edges.has(edgeId(e.from, e.to)) && !nodes.has(parseEdgeEnd(e.from).nodeId) && !nodes.has(parseEdgeEnd(e.to).nodeId));
  if (keptNodes.length === doc.nodes.length && keptEdges.length === doc.edges.length) return doc;
  return { ...doc, nodes: keptNodes, edges: keptEdges };
}

/** Moves nodes (positions rounded to whole pixels); the same document when none moved. */
export function moveNodes(doc: Doc, positions: ReadonlyMap<string, XYPosition>): Doc {
  let changed = false;
  const nodes = doc.nodes.map((n) => {
    const to = positions.get(n.id);
    if (!to) return n;
    const p = roundPosition(to);
    if (n.position && n.position.x === p.x && n.position.y === p.y) return n;
    changed = true;
    return { ...n, position: p };
  });
  return changed ? { ...doc, nodes } : doc;
}

function updateNode(doc: Doc, nodeId: string, update: (node: PipelineNode) => PipelineNode): Doc {
  let changed = false;
  const nodes = doc.nodes.map((n) => {
    if (n.id !== nodeId) return n;
    const next = update(n);
    if (next !== n) changed = true;
    return next;
  });
  return changed ? { ...doc, nodes } : doc;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Sets (or, with `undefined`, removes) the param at `path`, e.g. `["aggregate", "op"]`. */
export function setParam(doc: Doc, nodeId: string, path: readonly string[], value: unknown): Doc {
  if (path.length === 0) throw new Error("setParam: empty param path");
  const write = (target: Record<string, unknown>, rest: readonly string[]): Record<string, unknown> => {
    const [key, ...deeper] = rest as [string, ...string[]];
    if (deeper.length === 0) {
      if (value === undefined) {
        if (!(key in target)) return target;
        const { [key]: _removed, ...kept } = target;
        return kept;
      }
      return sameValue(target[key], value) ? target : { ...target, [key]: value };
    }
    const child = isPlainObject(target[key]) ? (target[key] as Record<string, unknown>) : {};
    const next = write(child, deeper);
    return next === child && key in target ? target : { ...target, [key]: next };
  };
  return updateNode(doc, nodeId, (n) => {
    const params = write(n.params, path);
    return params === n.params ? n : { ...n, params };
  });
}

/** Replaces every param of a node at once (the JSON editor of the inspector). */
export function setParams(doc: Doc, nodeId: string, params: Record<string, unknown>): Doc {
  return updateNode(doc, nodeId, (n) => (sameValue(n.params, params) ? n : { ...n, params }));
}

/** Label and notes; an empty string removes them. */
export function setNodeMeta(doc: Doc, nodeId: string, meta: { label?: string; notes?: string }): Doc {
  return updateNode(doc, nodeId, (n) => {
    let next = n;
    for (const key of ["label", "notes"] as const) {
      if (!(key in meta)) continue;
      const value = meta[key];
      if ((value ?? "") === (n[key] ?? "")) continue;
      if (value) next = { ...next, [key]: value };
      else {
        const { [key]: _removed, ...kept } = next;
        next = kept;
      }
    }
    return next;
  });
}

// ---- Edges ----------------------------------------------------------------------------------

/** Adds the edge `from -> to` when the shared validator's canConnect allows it. */
export function connect(doc: Doc, from: string, to: string): { ok: true; doc: Doc } | Extract<ConnectResult, { ok: false }> {
  const result = canConnect(doc, from, to);
  if (!result.ok) return result;
  return { ok: true, doc: { ...doc, edges: [...doc.edges, { from, to }] } };
}

// ---- Clipboard ------------------------------------------------------------------------------

export const CLIPBOARD_FORMAT = "keyflow.clipboard/v1";

/** Copied nodes and the edges between them, as JSON (it also goes to the system clipboard). */
export interface Clipboard {
  format: typeof CLIPBOARD_FORMAT;
  nodes: PipelineNode[];
  edges: { from: string; to: string }[];
}

export function copyNodes(doc: Doc, nodeIds: Iterable<string>): Clipboard | undefined {
  const ids = new Set(nodeIds);
  const nodes = doc.nodes.filter((n) => ids.has(n.id));
  if (nodes.length === 0) return undefined;
  const edges = doc.edges.filter((e) => ids.has(parseEdgeEnd(e.from).nodeId) && ids.has(parseEdgeEnd(e.to).nodeId));
  return structuredClone({ format: CLIPBOARD_FORMAT, nodes, edges });
}

/** A clipboard read back from text (the system clipboard), or undefined when it is not one. */
export function parseClipboard(text: string): Clipboard | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (!isPlainObject(value) || value.format !== CLIPBOARD_FORMAT || !Array.isArray(value.nodes) || !Array.isArray(value.edges)) return undefined;
    const nodes = value.nodes.filter((n): n is PipelineNode => isPlainObject(n) && typeof n.id === "string" && typeof n.type === "string");
    const edges = value.edges.filter((e): e is { from: string; to: string } => isPlainObject(e) && typeof e.from === "string" && typeof e.to === "string");
    return { format: CLIPBOARD_FORMAT, nodes: nodes.map((n) => ({ ...n, params: isPlainObject(n.params) ? n.params : {} })), edges };
  } catch {
    return undefined;
  }
}

/**
 * Pastes copies of the clipboard's nodes, moved by `offset`, each under a new unique id from the
 * same stem (`velocity` → `velocity2`), with the edges between them renamed accordingly.
 */
export function pasteClipboard(doc: Doc, clip: Clipboard, offset: XYPosition): { doc: Doc; nodeIds: string[] } {
  const taken = idsOf(doc);
  const renamed = new Map<string, string>();
  const nodes: PipelineNode[] = clip.nodes.map((n) => {
    const id = uniqueNodeId(idStem(n.id), taken);
    taken.add(id);
    renamed.set(n.id, id);
    const at = n.position ?? { x: 0, y: 0 };
    return { ...structuredClone(n), id, position: roundPosition({ x: at.x + offset.x, y: at.y + offset.y }) };
  });
  const rename = (end: string, role: "from" | "to"): string | undefined => {
    const { nodeId, port } = endPort(end, role);
    const id = renamed.get(nodeId);
    return id === undefined ? undefined : edgeEnd(id, port, role);
  };
  const edges = clip.edges.flatMap((e) => {
    const from = rename(e.from, "from");
    const to = rename(e.to, "to");
    return from && to ? [{ from, to }] : [];
  });
  return { doc: { ...doc, nodes: [...doc.nodes, ...nodes], edges: [...doc.edges, ...edges] }, nodeIds: nodes.map((n) => n.id) };
}

// ---- Free space -----------------------------------------------------------------------------

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

const overlaps = (a: Rect, b: Rect, gap: number): boolean =>
  a.x < b.x + b.width + gap && b.x < a.x + a.width + gap && a.y < b.y + b.height + gap && b.y < a.y + a.height + gap;

/**
 * The spot nearest to `preferred` where a node of `size` overlaps none of `occupied`: tried
 * first at `preferred`, then further down, then in the next columns to the right.
 */
export function findFreePosition(occupied: readonly Rect[], preferred: XYPosition, size: { width: number; height: number }, gap = 32): XYPosition {
  const stepX = size.width + gap;
  const stepY = Math.max(48, Math.round(size.height / 2));
  for (let column = 0; column < 40; column++) {
    for (let row = 0; row < 24; row++) {
      const candidate = { x: preferred.x + column * stepX, y: preferred.y + row * stepY, ...size };
      if (!occupied.some((r) => overlaps(candidate, r, gap))) return { x: candidate.x, y: candidate.y };
    }
  }
  return { x: preferred.x, y: preferred.y };
}
