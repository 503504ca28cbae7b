// What the operations panels say about the runner's figures: the checkpoint-duration warning, the
// skew verdict and its hint, and how a source partition reads. Framework-free; nothing here
// estimates a figure the runner did not send.
import type { OperatorSkew, SourcePartition } from "./metrics";

/** A checkpoint slower than this share of checkpointTimeoutMs is a warning (the seeds' checklist item 9). */
export const SLOW_CHECKPOINT_SHARE = 0.8;

/** Whether a checkpoint's duration (done, or still running) has passed 80 % of the timeout. */
export function checkpointNearTimeout(durationMs: number, timeoutMs: number): boolean {
  return durationMs > timeoutMs * SLOW_CHECKPOINT_SHARE;
}

/** The skew verdict of a keyed operator: its overloaded subtasks and the hint to salt the key. */
export function skewVerdict(op: OperatorSkew): { skewed: boolean; hint: string | null; loadRatio: number[] } {
  const loadRatio = op.records.map((r) => (op.mean > 0 ? Math.round((r / op.mean) * 100) / 100 : 0));
  if (op.skewedSubtasks.length === 0) return { skewed: false, hint: null, loadRatio };
  const hot = op.hotKeys.filter((k) => op.skewedSubtasks.includes(k.subtask)).slice(0, 3);
  const keys = hot.length > 0 ? ` (hottest: ${hot.map((k) => `"${k.key}" ${Math.round(k.share * 100)} %`).join(", ")})` : "";
  const which = op.skewedSubtasks.map((s) => `subtask ${s}`).join(", ");
  return {
    skewed: true,
    loadRatio,
    hint: `${which} of "${op.node}" carr${op.skewedSubtasks.length === 1 ? "ies" : "y"} more than twice the mean load${keys}. Salt the key (keyBy { salt: N }) to spread a hot key over N subtasks, then merge the partial results (windows: combine partial windows).`,
  };
}

/** A partition's state word for the Sources panel. */
export function partitionState(p: SourcePartition): "idle" | "lagging" | "active" | "waiting" {
  if (p.idle) return "idle";
  if (p.lag !== null && p.lag > 0) return "lagging";
  return p.records > 0 ? "active" : "waiting";
}
