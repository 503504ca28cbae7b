// When periodic checkpoints are due, for the single-threaded loop and the parallel source task alike.

/**
 * The due time of the checkpoint after one that was due at `due` and started at `startedAt`: at a
 * fixed rate, `intervalMs` after the due time (Flink's periodic trigger), so a barrier injected late
 * (after the batch in hand, a flush) does not push every later one back; each record's wait for the
 * next barrier, which an exactly-once output adds to its latency, stays within the interval. When
 * the job fell a whole interval behind, `intervalMs` after the start instead (no burst of barriers
 * to catch up), and never before `earliest` (the minimum pause after the last one ended).
 */
export function nextCheckpointDue(due: number, startedAt: number, intervalMs: number, earliest: number): number {
  const fixedRate = due + intervalMs;
  return Math.max(fixedRate > startedAt ? fixedRate : startedAt + intervalMs, earliest);
}
