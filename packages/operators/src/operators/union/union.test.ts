import { OperatorTestHarness } from "@keyflow/operators/testing";
import { describe, expect, it } from "vitest";
import { unionSpec } from "./union";

describe("union", () => {
  it("forwards every record unchanged, in arrival order", () => {
    const h = OperatorTestHarness.forSpec(unionSpec, {}, { nodeId: "u" });
    h.processElement({ from: "a" }, 3);
    h.processElement({ from: "b" }, 1);
    h.processElement({ from: "a" }, 2);
    expect(h.output().map((o) => [o.value["from"], o.timestamp])).toEqual([
      ["a", 3],
      ["b", 1],
      ["a", 2],
    ]);
  });

  it("takes several streams on one input and outputs an unkeyed stream", () => {
    expect(unionSpec.inputs).toEqual([{ id: "in", label: "streams", accepts: ["stream", "keyed"], multiple: true, required: true }]);
    expect(unionSpec.outputs[0]?.kind).toBe("stream");
  });
});
