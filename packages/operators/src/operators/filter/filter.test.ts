import { OperatorTestHarness } from "@keyflow/operators/testing";
import { describe, expect, it } from "vitest";
import { filterSpec } from "./filter";

const harness = (expression: string, keyed = false) => OperatorTestHarness.forSpec(filterSpec, { expression }, { keyed, nodeId: "f" });

describe("filter", () => {
  it("keeps the records matching the predicate, in order, with their timestamps", () => {
    const h = harness('amount > 50000 && country != "SA"');
    h.processElement({ id: 1, amount: 60000, country: "AE" }, 10);
    h.processElement({ id: 2, amount: 60000, country: "SA" }, 11);
    h.processElement({ id: 3, amount: 50000.5, country: "GB" }, 12);
    h.processElement({ id: 4, amount: 50000, country: "GB" }, 13);
    expect(h.output()).toEqual([
      { port: "out", value: { id: 1, amount: 60000, country: "AE" }, timestamp: 10 },
      { port: "out", value: { id: 3, amount: 50000.5, country: "GB" }, timestamp: 12 },
    ]);
  });

  it("keeps a keyed stream keyed", () => {
    const h = harness("amount > 1", true);
    h.processElement({ amount: 5 }, 1, "card-1");
    h.processElement({ amount: 0 }, 2, "card-2");
    expect(h.output()).toEqual([{ port: "out", value: { amount: 5 }, timestamp: 1, key: "card-1" }]);
  });

  it("sends a record it cannot evaluate to `errors` with the reason and the record, and carries on", () => {
    const h = harness("amount > 100");
    h.processElement({ id: "a" }, 5);
    h.processElement({ id: "b", amount: "lots" }, 6);
    h.processElement({ id: "c", amount: 101 }, 7);
    expect(h.output()).toEqual([
      { port: "errors", value: { error: 'node "f": param "expression": field "amount" is missing from the record', record: { id: "a" } }, timestamp: 5 },
      { port: "errors", value: { error: 'node "f": param "expression": no such overload: string > int', record: { id: "b", amount: "lots" } }, timestamp: 6 },
      { port: "out", value: { id: "c", amount: 101 }, timestamp: 7 },
    ]);
  });

  it("sends a non-bool result to `errors`", () => {
    const h = harness("amount");
    h.processElement({ amount: 3 }, 1);
    expect(h.outputOf("errors")[0]?.value["error"]).toMatch(/must give a bool/);
  });

  it("keeps no state", () => {
    const h = harness("true");
    h.processElement({ a: 1 }, 1);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });

  it("reports syntax and unknown fields through check()", () => {
    expect(filterSpec.check?.({ expression: "amount >" }, { nodeId: "f" })).toEqual([
      { severity: "error", code: "expression-syntax", param: "expression", message: "syntax error at line 1, column 9: unexpected end of the expression (an operand or a closing bracket is missing)" },
    ]);
    expect(filterSpec.check?.({ expression: "amount > 1" }, { nodeId: "f", inputFields: ["amount"] })).toEqual([]);
  });
});

describe("filter: budgets fail the record into `errors`, not the job", () => {
  it("sends a record whose evaluation blows the allocation budget to `errors` with the reason, and carries on", () => {
    // Each bind makes a list 8 times longer than the one before: 8^9 elements at the end.
    let body = "l8.size() > n";
    for (let i = 8; i >= 1; i--) body = `cel.bind(l${i}, ${Array(8).fill(`l${i - 1}`).join(" + ")}, ${body})`;
    const h = harness(`cel.bind(l0, [1, 2, 3, 4, 5, 6, 7, 8], ${body})`);
    h.processElement({ id: "a", n: 1 }, 5);
    const errors = h.outputOf("errors");
    expect(errors).toHaveLength(1);
    expect(errors[0]?.value["error"]).toMatch(/^node "f": param "expression": evaluation budget: it created more than/);
  });

  it("sends a record whose matches() would backtrack catastrophically through in linear time", () => {
    const h = harness('card.matches("(a+)+$")');
    const started = performance.now();
    h.processElement({ card: `${"a".repeat(24)}b` }, 1);
    h.processElement({ card: "aa" }, 2);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(h.output()).toEqual([{ port: "out", value: { card: "aa" }, timestamp: 2 }]);
  });
});
