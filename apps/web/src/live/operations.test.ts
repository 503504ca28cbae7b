import { describe, expect, it } from "vitest";
import { runnerSnapshotSchema, toLiveMetrics, type OperatorSkew } from "./metrics";
import { checkpointNearTimeout, partitionState, skewVerdict } from "./operations";

const op = (records: number[], skewed: number[], hotKeys: OperatorSkew["hotKeys"] = []): OperatorSkew => ({
  node: "byCard",
  records,
  mean: records.reduce((a, b) => a + b, 0) / records.length,
  skewedSubtasks: skewed,
  hotKeys,
});

describe("checkpointNearTimeout", () => {
  it("warns past 80 % of the timeout, not at it", () => {
    expect(checkpointNearTimeout(800, 1000)).toBe(false);
    expect(checkpointNearTimeout(801, 1000)).toBe(true);
    expect(checkpointNearTimeout(50, 600_000)).toBe(false);
  });
});

describe("skewVerdict", () => {
  it("flags the subtasks the runner flagged, with the hottest keys there and the hint to salt the key", () => {
    const v = skewVerdict(
      op([100, 100, 700, 100], [2], [
        { key: "card-7", count: 500, error: 0, subtask: 2, share: 0.5 },
        { key: "card-1", count: 20, error: 0, subtask: 0, share: 0.02 },
      ]),
    );
    expect(v.skewed).toBe(true);
    expect(v.loadRatio).toEqual([0.4, 0.4, 2.8, 0.4]);
    expect(v.hint).toMatch(/^subtask 2 of "byCard" carries more than twice the mean load \(hottest: "card-7" 50 %\)\. Salt the key \(keyBy \{ salt: N \}\)/);
    expect(v.hint).not.toMatch(/card-1/);
  });
  it("has no hint for an even load, and no ratios before records flow", () => {
    expect(skewVerdict(op([100, 90, 110], []))).toEqual({ skewed: false, hint: null, loadRatio: [1, 0.9, 1.1] });
    expect(skewVerdict(op([0, 0], [])).loadRatio).toEqual([0, 0]);
  });
});

describe("partitionState", () => {
  const p = { partition: 0, records: 10, lastOffset: "9", lastRecordAt: 1, idle: false, lag: 0, watermark: null };
  it("reads idle, lagging, active and waiting from the runner's figures", () => {
    expect(partitionState({ ...p, idle: true, lag: 5 })).toBe("idle");
    expect(partitionState({ ...p, lag: 5 })).toBe("lagging");
    expect(partitionState(p)).toBe("active");
    expect(partitionState({ ...p, records: 0, lag: null })).toBe("waiting");
  });
});

describe("the operations figures of a snapshot", () => {
  it("passes the runner's partitions, checkpoint in flight, failed checkpoints, skew and throttle through, checked", () => {
    const snap = runnerSnapshotSchema.parse({
      jobId: "d",
      status: "running",
      time: "2026-06-01T09:00:00Z",
      nodes: { out: { type: "sink.file", throttleRecordsPerSecond: 5, busyTimeMsPerSecond: 990 } },
      sourcePartitions: { pay: { input: null, partitions: [{ partition: 0, records: 3, lastOffset: "2", lastRecordAt: 5, idle: false, lag: null, watermark: 1000 }] } },
      checkpointInProgress: { id: 4, triggeredAt: 10, tasks: [{ task: "source", subtask: 0, acknowledged: true }, { task: "keyed", subtask: 0, acknowledged: false }] },
      failedCheckpoints: [{ id: 3, triggeredAt: 1, failedAt: 2, reason: "not acknowledged by every task within checkpointTimeoutMs (100 ms)" }],
      skew: [op([1, 3], [1])],
    });
    const m = toLiveMetrics("d", snap, undefined);
    expect(m.nodes.out).toMatchObject({ throttleRecordsPerSecond: 5, busyTimeMsPerSecond: 990 });
    expect(m.sourcePartitions.pay?.partitions[0]?.watermark).toBe(1000);
    expect(m.checkpointInProgress?.tasks.filter((t) => t.acknowledged).length).toBe(1);
    expect(m.failedCheckpoints[0]?.reason).toMatch(/checkpointTimeoutMs/);
    expect(m.skew[0]?.skewedSubtasks).toEqual([1]);
  });
  it("defaults to none when an older runner sends none of them", () => {
    const m = toLiveMetrics("d", runnerSnapshotSchema.parse({ jobId: "d", time: "2026-06-01T09:00:00Z", nodes: {} }), undefined);
    expect(m).toMatchObject({ sourcePartitions: {}, checkpointInProgress: null, failedCheckpoints: [], skew: [] });
  });
});
