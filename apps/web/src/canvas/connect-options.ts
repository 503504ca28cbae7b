// The keyboard "connect" command: every edge that could join the selected node to another one,
// each with the shared validator's verdict, so the analyst picks from a list instead of dragging.
// Framework-free.
import { canConnect, type PipelineDocument } from "@keyflow/operators";
import type { CatalogLookup } from "./flow";
import { edgeEnd } from "./graph-edit";

export interface ConnectOption {
  from: string;
  to: string;
  /** `out`: from the node to another one; `in`: from another node into it. */
  direction: "out" | "in";
  /** The other node's id. */
  other: string;
  /** "velocity:late (late records) → lateSink (records)", for reading and searching. */
  label: string;
  ok: boolean;
  reason?: string;
}

/**
 * Every edge between `nodeId` and another node that the operators' ports allow: outgoing first
 * (what an analyst usually wants after adding a node is to feed it or feed something with it),
 * then incoming; within each, those the validator accepts first, in document order. Edges that
 * already exist are left out.
 */
export function connectOptions(doc: PipelineDocument, nodeId: string, lookup: CatalogLookup): ConnectOption[] {
  const node = doc.nodes.find((n) => n.id === nodeId);
  const spec = node ? lookup(node.type) : undefined;
  if (!node || !spec) return [];
  const existing = new Set(doc.edges.map((e) => `${e.from}->${e.to}`));
  const options: ConnectOption[] = [];
  const push = (direction: "out" | "in", other: string, fromNode: string, fromPort: { id: string; label: string }, toNode: string, toPort: { id: string; label: string }) => {
    const from = edgeEnd(fromNode, fromPort.id, "from");
    const to = edgeEnd(toNode, toPort.id, "to");
    if (existing.has(`${from}->${to}`)) return;
    const result = canConnect(doc, from, to);
    options.push({
      from,
      to,
      direction,
      other,
      label: `${fromNode}:${fromPort.id} (${fromPort.label}) → ${toNode}:${toPort.id} (${toPort.label})`,
      ok: result.ok,
      ...(result.ok ? {} : { reason: result.reason }),
    });
  };
  for (const other of doc.nodes) {
    if (other.id === nodeId) continue;
    const otherSpec = lookup(other.type);
    if (!otherSpec) continue;
    for (const out of spec.outputs) for (const input of otherSpec.inputs) push("out", other.id, nodeId, out, other.id, input);
  }
  for (const other of doc.nodes) {
    if (other.id === nodeId) continue;
    const otherSpec = lookup(other.type);
    if (!otherSpec) continue;
    for (const out of otherSpec.outputs) for (const input of spec.inputs) push("in", other.id, other.id, out, nodeId, input);
  }
  const rank = (o: ConnectOption) => (o.ok ? 0 : 2) + (o.direction === "out" ? 0 : 1);
  return options.map((o, i) => ({ o, i })).sort((a, b) => rank(a.o) - rank(b.o) || a.i - b.i).map(({ o }) => o);
}

/** Options whose label has every word of the query (case-insensitive). */
export function filterConnectOptions(options: readonly ConnectOption[], query: string): ConnectOption[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return options.filter((o) => words.every((w) => o.label.toLowerCase().includes(w)));
}
