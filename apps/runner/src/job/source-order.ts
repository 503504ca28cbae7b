// The order in which a job starts its sources. A bounded source that only feeds `reference` inputs
// (a broadcast table read from a file) runs to its end before the others start: enrich.broadcast
// enriches each record with the reference seen so far, so with both files read at once the result
// would depend on which read the disk answered first (and did, on a loaded machine).
import { parseEdgeEnd, type PipelineDocument } from "@keyflow/operators";
import type { RecordSource } from "../io/types";

/** The source nodes whose output only feeds `reference` inputs. */
export function referenceOnlySources(doc: PipelineDocument): Set<string> {
  const sources = new Set(doc.nodes.filter((n) => n.type.startsWith("source.")).map((n) => n.id));
  const feedsMain = new Set<string>();
  const feedsAny = new Set<string>();
  for (const e of doc.edges) {
    const from = parseEdgeEnd(e.from).nodeId;
    if (!sources.has(from)) continue;
    feedsAny.add(from);
    if ((parseEdgeEnd(e.to).port ?? "in") !== "reference") feedsMain.add(from);
  }
  return new Set([...feedsAny].filter((id) => !feedsMain.has(id)));
}

/**
 * Starts every source with `start` (which runs it and queues its end): the bounded reference-only
 * ones first, the others once those have ended, unless `signal` aborted meanwhile. An unbounded
 * reference source (Kafka) never ends, so it starts beside the others.
 */
export function startSources<S extends Pick<RecordSource, "nodeId" | "bounded">>(doc: PipelineDocument, sources: readonly S[], signal: AbortSignal, start: (source: S) => Promise<unknown>): void {
  const referenceOnly = referenceOnlySources(doc);
  const first = sources.filter((s) => s.bounded && referenceOnly.has(s.nodeId));
  const rest = sources.filter((s) => !first.includes(s));
  if (first.length === 0) {
    for (const s of rest) void start(s);
    return;
  }
  void Promise.allSettled(first.map((s) => start(s))).then(() => {
    if (!signal.aborted) for (const s of rest) void start(s);
  });
}
