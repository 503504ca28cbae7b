import { OperatorTestHarness } from "@keyflow/operators/testing";
import { describe, expect, it } from "vitest";
import { mapSpec } from "./map";

describe("map", () => {
  it("adds fields computed from the input record, keeping the others", () => {
    const h = OperatorTestHarness.forSpec(mapSpec, { assignments: { amountEur: "amount * 0.25", abroad: "country != cardCountry", amount: "amount * 2" } }, { nodeId: "m" });
    h.processElement({ amount: 100, country: "FR", cardCountry: "SA" }, 7);
    // Every assignment reads the input: amountEur uses amount 100, not the doubled 200.
    expect(h.output()).toEqual([{ port: "out", value: { amount: 200, country: "FR", cardCountry: "SA", amountEur: 25, abroad: true }, timestamp: 7 }]);
  });

  it("builds a whole record with `expression`, ints as JSON numbers", () => {
    const h = OperatorTestHarness.forSpec(mapSpec, { expression: '{"cardId": cardId, "risk": amount > 1000 ? "high" : "low", "n": size(tags)}' }, { nodeId: "m" });
    h.processElement({ cardId: "c1", amount: 5000, tags: ["a", "b"] }, 1);
    expect(h.output()).toEqual([{ port: "out", value: { cardId: "c1", risk: "high", n: 2 }, timestamp: 1 }]);
  });

  it("keeps the key of a keyed stream", () => {
    const h = OperatorTestHarness.forSpec(mapSpec, { assignments: { y: "x + 1" } }, { keyed: true, nodeId: "m" });
    h.processElement({ x: 1 }, 1, "k1");
    expect(h.output()).toEqual([{ port: "out", value: { x: 1, y: 2 }, timestamp: 1, key: "k1" }]);
  });

  it("sends a record to `errors` unchanged when an expression fails, or when `expression` builds no object", () => {
    const h = OperatorTestHarness.forSpec(mapSpec, { assignments: { ok: "1", ratio: "amount / total" } }, { nodeId: "m" });
    h.processElement({ amount: 1 }, 1);
    h.processElement({ amount: 1, total: 0 }, 2);
    expect(h.output()).toEqual([
      { port: "errors", value: { error: 'node "m": param "assignments.ratio": field "total" is missing from the record', record: { amount: 1 } }, timestamp: 1 },
      { port: "errors", value: { error: 'node "m": param "assignments.ratio": the result Infinity is not a finite number (division by zero?)', record: { amount: 1, total: 0 } }, timestamp: 2 },
    ]);
    const whole = OperatorTestHarness.forSpec(mapSpec, { expression: "amount" }, { nodeId: "m" });
    whole.processElement({ amount: 3 }, 1);
    expect(whole.output()).toEqual([
      { port: "errors", value: { error: 'node "m": param "expression": the expression must build an object such as {"field": value}, but gave 3', record: { amount: 3 } }, timestamp: 1 },
    ]);
  });

  it("refuses both or neither of assignments and expression", () => {
    expect(mapSpec.params.safeParse({}).success).toBe(false);
    expect(mapSpec.params.safeParse({ assignments: { a: "1" }, expression: "{}" }).success).toBe(false);
    expect(mapSpec.params.safeParse({ assignments: { "bad name": "1" } }).success).toBe(false);
  });

  it("declares its output fields and checks each assignment", () => {
    expect(mapSpec.outputFields?.({ assignments: { b: "a" } }, ["a"])).toEqual(["a", "b"]);
    expect(mapSpec.outputFields?.({ expression: "{}" }, ["a"])).toBeUndefined();
    expect(mapSpec.check?.({ assignments: { b: "c + 1" } }, { nodeId: "m", inputFields: ["a"] })).toEqual([
      { severity: "error", code: "unknown-field", param: "assignments.b", message: 'unknown field "c" — did you mean "a"?; the input records have "a"' },
    ]);
  });
});
