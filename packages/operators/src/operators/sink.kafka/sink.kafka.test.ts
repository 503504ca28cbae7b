import { describe, expect, it } from "vitest";
import { sinkKafkaSpec } from "./sink.kafka";

describe("sink.kafka spec", () => {
  it("defaults to exactly-once delivery", () => {
    expect(sinkKafkaSpec.params.parse({ topic: "alerts" })).toEqual({ topic: "alerts", deliveryGuarantee: "exactly-once" });
    expect(sinkKafkaSpec.params.safeParse({ topic: "alerts", deliveryGuarantee: "exactly-twice" }).success).toBe(false);
  });

  it("is a sink: takes keyed and unkeyed streams, several at once, and has no outputs", () => {
    expect(sinkKafkaSpec.inputs).toEqual([{ id: "in", label: "records", accepts: ["stream", "keyed"], multiple: true, required: true }]);
    expect(sinkKafkaSpec.outputs).toEqual([]);
  });
});
