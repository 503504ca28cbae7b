import { describe, expect, it } from "vitest";
import { PartitionWatermarks } from "./watermarks";

describe("PartitionWatermarks (bounded out-of-orderness per partition)", () => {
  it("is max − maxOutOfOrderness − 1, after every record, and never goes back", () => {
    const w = new PartitionWatermarks(10);
    expect(w.onRecord(0, 100, 0)).toBe(89);
    expect(w.onRecord(0, 95, 0)).toBeUndefined();
    expect(w.onRecord(0, 120, 0)).toBe(109);
    expect(w.watermark).toBe(109);
  });

  it("takes the minimum over non-idle partitions; idle ones stop holding it back", () => {
    const w = new PartitionWatermarks(0);
    w.onRecord(0, 50, 0);
    expect(w.onRecord(1, 10, 0)).toBeUndefined(); // 9 < 49: held, not moved back
    expect(w.onRecord(1, 60, 0)).toBeUndefined(); // min(49, 59) = 49 = current
    expect(w.onRecord(0, 70, 0)).toBe(59);
    expect(w.markIdle(1, 0)).toBe(69);
    expect(w.idle).toBe(false);
    w.markIdle(0, 0);
    expect(w.idle).toBe(true);
  });

  it("reports each partition's own watermark and idleness, null before its first record", () => {
    const w = new PartitionWatermarks(1_000);
    w.onRecord(0, 5_000, 0);
    w.onRecord(1, 9_000, 0);
    w.markIdle(2, 0);
    expect(w.partitionWatermarks()).toEqual([
      { partition: 0, watermark: 3_999, idle: false },
      { partition: 1, watermark: 7_999, idle: false },
      { partition: 2, watermark: null, idle: true },
    ]);
  });

  it("finds partitions silent for the idle timeout, ends at +infinity, and snapshots", () => {
    const w = new PartitionWatermarks(0);
    w.onRecord(2, 5, 100);
    w.onRecord(1, 5, 300);
    expect(w.silentPartitions(1_100, 1_000)).toEqual([2]);
    const copy = new PartitionWatermarks(0);
    copy.restore(w.snapshot());
    expect(copy.snapshot()).toEqual(w.snapshot());
    w.end();
    expect(w.watermark).toBe(Infinity);
    expect(w.onRecord(1, 1_000, 0)).toBeUndefined();
  });
});
