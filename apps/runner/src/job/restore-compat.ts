// Whether a checkpoint's or savepoint's state fits a (possibly changed) pipeline. State is mapped by
// node id, as Flink maps it by operator uid; what no longer fits is refused with the node named,
// before anything runs:
// - a stateful node of the checkpoint that the pipeline no longer has (its state would be silently
//   lost): refused unless allowNonRestoredState, Flink's --allow-non-restored-state, drops it;
// - a node whose operator type or operator version changed (its state has another layout);
// - a stateful node whose state key changed: the keyBy field feeding it (or its own key param);
// - params that shape the stored state itself (window slicing, velocity's mode, day boundaries),
//   listed in LAYOUT_PARAMS below; other params (thresholds, expressions, sink topics) may change.
// Checkpoints written before the graph was recorded in `_metadata.json` are restored unchecked.
import { getOperatorSpec, type PipelineDocument } from "@keyflow/operators";
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";

const jsonRecord = z.record(z.string(), z.custom<JsonValue>(() => true));

/** The graph as recorded in a checkpoint's metadata. */
export const checkpointGraphSchema = z.object({
  nodes: z.array(z.object({ id: z.string(), type: z.string(), version: z.number().int().optional(), params: jsonRecord })),
  edges: z.array(z.object({ from: z.string(), to: z.string() })),
});
export type CheckpointGraph = z.infer<typeof checkpointGraphSchema>;

/** Params that decide the layout of an operator's stored state, by operator type. */
const LAYOUT_PARAMS: Record<string, readonly string[]> = {
  "window.tumbling": ["sizeMs", "aggregate"],
  "window.hopping": ["sizeMs", "slideMs", "aggregate"],
  "window.session": ["gapMs", "aggregate"],
  velocity: ["mode"],
  dedup: ["field"],
  dailyTotal: ["timeZone"],
  structuring: ["timeZone"],
  "enrich.temporal": ["keyField", "referenceKeyField"],
};

export function graphOf(doc: PipelineDocument): CheckpointGraph {
  return {
    nodes: doc.nodes.map((n) => ({ id: n.id, type: n.type, version: getOperatorSpec(n.type)?.version ?? 0, params: n.params as Record<string, JsonValue> })),
    edges: doc.edges.map((e) => ({ from: e.from, to: e.to })),
  };
}

const nodeOfEnd = (end: string) => end.split(":")[0] ?? end;

/** The keyBy fields upstream of `id` (what its keyed state is keyed by), nearest first. */
function keyFields(g: CheckpointGraph, id: string): string[] {
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const out: string[] = [];
  const seen = new Set<string>();
  const walk = (to: string) => {
    for (const e of g.edges) {
      if (nodeOfEnd(e.to) !== to) continue;
      const from = nodeOfEnd(e.from);
      if (seen.has(from)) continue;
      seen.add(from);
      const n = byId.get(from);
      if (n?.type === "keyBy") out.push(JSON.stringify(n.params.field ?? n.params));
      else walk(from);
    }
  };
  walk(id);
  return out.sort();
}

export interface RestoreCheck {
  /** One line per node whose state does not fit; empty: restorable. */
  problems: string[];
  /** Stateful nodes of the checkpoint whose state is dropped (allowNonRestoredState). */
  dropped: string[];
}

export function checkRestore(old: CheckpointGraph, doc: PipelineDocument, allowNonRestoredState: boolean, what: string): RestoreCheck {
  const now = graphOf(doc);
  const nowById = new Map(now.nodes.map((n) => [n.id, n]));
  const problems: string[] = [];
  const dropped: string[] = [];
  for (const o of old.nodes) {
    const stateful = getOperatorSpec(o.type)?.stateful ?? false;
    const n = nowById.get(o.id);
    if (!n) {
      if (!stateful) continue;
      if (allowNonRestoredState) dropped.push(o.id);
      else problems.push(`node "${o.id}" (${o.type}) has state in ${what} but is not in the pipeline: restore with allowNonRestoredState (--allow-non-restored-state) to drop its state`);
      continue;
    }
    if (n.type !== o.type) {
      problems.push(`node "${o.id}": its state in ${what} is ${o.type} state, the pipeline now makes it a ${n.type}; give the new operator another node id`);
      continue;
    }
    if (!stateful) continue;
    if (o.version !== undefined && n.version !== undefined && n.version !== o.version) {
      problems.push(`node "${o.id}" (${o.type}): its state in ${what} was written by operator version ${o.version}, this runner has version ${n.version}`);
      continue;
    }
    const changed = (LAYOUT_PARAMS[o.type] ?? []).filter((p) => JSON.stringify(o.params[p] ?? null) !== JSON.stringify(n.params[p] ?? null));
    if (changed.length > 0) {
      problems.push(`node "${o.id}" (${o.type}): param${changed.length > 1 ? "s" : ""} ${changed.map((p) => `"${p}"`).join(", ")} changed since ${what}, and the stored state is laid out by ${changed.length > 1 ? "them" : "it"}; give the node another id to start it empty`);
      continue;
    }
    const getSpecKeyed = getOperatorSpec(o.type)?.requiresKeyedInput ?? false;
    if (getSpecKeyed) {
      const before = keyFields(old, o.id).join(",");
      const after = keyFields(now, o.id).join(",");
      if (before !== after) problems.push(`node "${o.id}" (${o.type}): its state in ${what} is keyed by ${before || "nothing"}, the pipeline now keys it by ${after || "nothing"}; give the node another id to start it empty`);
    }
  }
  return { problems, dropped };
}
