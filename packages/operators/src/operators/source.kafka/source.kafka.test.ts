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
});
