// Busy / backpressured / idle ms per second of every node, from whichever task runs it: a
// single-threaded job's engine loop (every node but the sinks), a parallel job's source task, keyed
// subtasks and sink task (a node in several subtasks shows its worst one), and each sink's own
// account (time with a write pending), which wins for sink nodes in both cases.
import type { TaskTimes } from "../exec/channel";
import type { SubtaskMetrics } from "../exec/parallel";

export interface NodeTaskTimes extends TaskTimes {
  /** Records on the node's task's output channels not yet consumed (parallel jobs). */
  queuedRecords?: number;
}

export function nodeTaskTimes(
  nodeIds: readonly string[],
  input: { engine: TaskTimes | undefined; subtasks: readonly SubtaskMetrics[]; sinks: Readonly<Record<string, TaskTimes>> },
): Record<string, NodeTaskTimes> {
  const out: Record<string, NodeTaskTimes> = {};
  if (input.engine) for (const id of nodeIds) out[id] = { ...input.engine };
  for (const t of input.subtasks) {
    for (const id of t.nodes) {
      const prev = out[id];
      const times: NodeTaskTimes = {
        busyTimeMsPerSecond: t.busyTimeMsPerSecond,
        backPressuredTimeMsPerSecond: t.backPressuredTimeMsPerSecond,
        idleTimeMsPerSecond: t.idleTimeMsPerSecond,
        queuedRecords: t.queuedRecords,
      };
      out[id] = prev
        ? {
            busyTimeMsPerSecond: Math.max(prev.busyTimeMsPerSecond, times.busyTimeMsPerSecond),
            backPressuredTimeMsPerSecond: Math.max(prev.backPressuredTimeMsPerSecond, times.backPressuredTimeMsPerSecond),
            idleTimeMsPerSecond: Math.min(prev.idleTimeMsPerSecond, times.idleTimeMsPerSecond),
            queuedRecords: (prev.queuedRecords ?? 0) + t.queuedRecords,
          }
        : times;
    }
  }
  for (const [id, s] of Object.entries(input.sinks)) {
    // A sink has nothing below it to wait for.
    out[id] = { busyTimeMsPerSecond: s.busyTimeMsPerSecond, backPressuredTimeMsPerSecond: 0, idleTimeMsPerSecond: s.idleTimeMsPerSecond };
  }
  return out;
}
