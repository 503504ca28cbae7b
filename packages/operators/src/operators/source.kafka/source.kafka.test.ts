import { describe, expect, it } from "vitest";
import { sourceKafkaSpec } from "./source.kafka";

describe("source.kafka spec", () => {
  it("fills the documented defaults and normalizes durations", () => {
    expect(sourceKafkaSpec.params.parse({ topic: "payments", timestampField: "ts", idleTimeoutMs: "30s" })).toEqual({
      topic: "payments",
      startFrom: "earliest",
      bounded: false,
      timestampField: "ts",
      maxOutOfOrdernessMs: 10_000,
      idleTimeoutMs: 30_000,
      format: "json",
    });
  });

  it("leaves brokers unset, for the runner to take KAFKA_BROKERS", () => {
    expect(sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts" }).brokers).toBeUndefined();
    expect(sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", brokers: ["localhost:9092"] }).brokers).toEqual(["localhost:9092"]);
  });

  it("refuses unknown params and bad values", () => {
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", startFrom: "begin" }).success).toBe(false);
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", format: "avro" }).success).toBe(false);
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", groupId: "x" }).success).toBe(false);
  });

  it("is a source: no inputs, one stream output, declared fields flow downstream", () => {
    expect(sourceKafkaSpec.inputs).toEqual([]);
    expect(sourceKafkaSpec.outputs.map((o) => [o.id, o.kind])).toEqual([["out", "stream"]]);
    expect(sourceKafkaSpec.outputFields?.(sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", fields: ["a"] }), undefined)).toEqual(["a"]);
  });

  it("takes a range by offsets per partition or by instants, numbers or ISO-8601", () => {
    const p = sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", bounded: true, startOffsets: { "0": "10", "1": 4 }, endOffsets: { "0": 20 } });
    expect(p.startOffsets).toEqual({ "0": 10, "1": 4 });
    expect(p.endOffsets).toEqual({ "0": 20 });
    const t = sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", bounded: true, startTime: "2026-01-01T00:00:00Z", endTime: "1767229200000" });
    expect(t.startTime).toBe(Date.UTC(2026, 0, 1));
    expect(t.endTime).toBe(1_767_229_200_000);
    expect(sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", bounded: true, endTime: 1_767_229_200_000 }).endTime).toBe(1_767_229_200_000);
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", startOffsets: { p0: 1 } }).success).toBe(false);
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", startOffsets: {} }).success).toBe(false);
    expect(sourceKafkaSpec.params.safeParse({ topic: "t", timestampField: "ts", endTime: "yesterday" }).success).toBe(false);
  });

  it("checks the range: an end needs bounded, offsets or times not both, the end after the start", () => {
    const issues = (params: Record<string, unknown>) => sourceKafkaSpec.check?.(sourceKafkaSpec.params.parse({ topic: "t", timestampField: "ts", ...params }), { nodeId: "in" }) ?? [];
    expect(issues({ bounded: true, startOffsets: { "0": 1 }, endOffsets: { "0": 5 } })).toEqual([]);
    expect(issues({ endOffsets: { "0": 5 } }).map((i) => [i.param, i.message])).toEqual([["endOffsets", "an end of the range needs bounded: true (an unbounded source never stops)"]]);
    expect(issues({ bounded: true, startOffsets: { "0": 1 }, startTime: 5 }).map((i) => i.param)).toEqual(["startTime"]);
    expect(issues({ bounded: true, endOffsets: { "0": 1 }, endTime: 5 }).map((i) => i.param)).toEqual(["endTime"]);
    expect(issues({ bounded: true, startTime: 10, endTime: 5 }).map((i) => i.message)).toEqual(["must be after startTime"]);
    expect(issues({ bounded: true, startOffsets: { "0": 9 }, endOffsets: { "0": 5 } }).map((i) => [i.param, i.message])).toEqual([["endOffsets.0", "partition 0 ends at 5, before its start offset 9"]]);
  });
});
