// The job's memory budget (settings.maxJobStateBytes): its keyed state, as the node metrics
// estimate it, summed over nodes (and over keyed subtasks in a parallel job). Checked about once a
// second by the driver (one thread) or as the subtasks report (parallel); over it, that job fails.
import { formatBytes, type PipelineSettings } from "@keyflow/operators";

/** How often the job's keyed state is measured against settings.maxJobStateBytes. */
export const STATE_BUDGET_CHECK_MS = 1_000;

/** Throws (failing the job) when its heap state is over its budget, naming the largest node. */
export function checkJobStateBudget(nodes: Record<string, { stateBytes: number }>, settings: Pick<PipelineSettings, "maxJobStateBytes" | "stateBackend">): void {
  // The disk backend keeps state out of the heap: its size is the disk's business, not the runner's memory.
  if (settings.stateBackend !== "heap") return;
  let total = 0;
  let largest: [string, number] | undefined;
  for (const [id, m] of Object.entries(nodes)) {
    total += m.stateBytes;
    if (!largest || m.stateBytes > largest[1]) largest = [id, m.stateBytes];
  }
  if (total <= settings.maxJobStateBytes || !largest) return;
  throw new Error(
    `the job keeps ${formatBytes(total)} of state, over its memory budget of ${formatBytes(settings.maxJobStateBytes)} (settings.maxJobStateBytes); node "${largest[0]}" keeps ${formatBytes(largest[1])}`,
  );
}

/** The per-node state of a parallel job: each subtask's figures, summed by node. */
export function stateBytesByNode(reports: ReadonlyArray<{ nodes: Record<string, { stateBytes: number }> } | undefined>): Record<string, { stateBytes: number }> {
  const nodes: Record<string, { stateBytes: number }> = {};
  for (const r of reports) {
    if (!r) continue;
    for (const [id, m] of Object.entries(r.nodes)) (nodes[id] ??= { stateBytes: 0 }).stateBytes += m.stateBytes;
  }
  return nodes;
}
