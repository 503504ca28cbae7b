import { OperatorTestHarness } from "@keyflow/operators/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { keyBySpec, selectKey } from "./keyBy";

describe("keyBy", () => {
  it("keys each record by the field's canonical value", () => {
    const h = OperatorTestHarness.forSpec(keyBySpec, { field: "cardId" }, { nodeId: "k" });
    h.processElement({ cardId: "c1", amount: 5 }, 1);
    h.processElement({ cardId: 42 }, 2);
    h.processElement({ cardId: true }, 3);
    expect(h.output()).toEqual([
      { port: "out", value: { cardId: "c1", amount: 5 }, timestamp: 1, key: "c1" },
      { port: "out", value: { cardId: 42 }, timestamp: 2, key: "42" },
      { port: "out", value: { cardId: true }, timestamp: 3, key: "true" },
    ]);
  });

  it("re-keys a keyed stream", () => {
    const h = OperatorTestHarness.forSpec(keyBySpec, { field: "merchantId" }, { keyed: true, nodeId: "k" });
    h.processElement({ merchantId: "m1" }, 1, "card-1");
    expect(h.output()).toEqual([{ port: "out", value: { merchantId: "m1" }, timestamp: 1, key: "m1" }]);
  });

  it("sends records without a usable key to `errors`, naming the node and the field", () => {
    const h = OperatorTestHarness.forSpec(keyBySpec, { field: "cardId" }, { nodeId: "k" });
    h.processElement({ amount: 1 }, 1);
    h.processElement({ cardId: null }, 2);
    h.processElement({ cardId: { pan: "x" } }, 3);
    expect(h.output().map((o) => [o.port, o.value["error"]])).toEqual([
      ["errors", 'node "k": field "cardId" is missing; records without a key cannot be keyed (filter them out first)'],
      ["errors", 'node "k": field "cardId" is null; records without a key cannot be keyed (filter them out first)'],
      ["errors", 'node "k": field "cardId" is an object; a key must be a string, number or boolean (key by one of its fields instead)'],
    ]);
    expect(h.output()[0]?.value["record"]).toEqual({ amount: 1 });
  });

  it("salts a hot key into `<value>#<n>`, n < salt, the same for the same record", () => {
    const params = { field: "country", salt: 4 };
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const key = selectKey(params, { country: "SA", txId: `t${i}` });
      expect(key).toMatch(/^SA#[0-3]$/);
      expect(selectKey(params, { country: "SA", txId: `t${i}` })).toBe(key);
      seen.add(key);
    }
    expect(seen.size).toBe(4);
  });

  it("picks the sub-key from `saltBy` when given", () => {
    const params = { field: "merchantId", salt: 8, saltBy: "cardId" };
    expect(selectKey(params, { merchantId: "m", cardId: "c1", amount: 1 })).toBe(selectKey(params, { merchantId: "m", cardId: "c1", amount: 2 }));
    expect(() => selectKey(params, { merchantId: "m" })).toThrow('salt field "cardId" is missing');
  });

  it("property: every key is the field's value, salted into the declared number of sub-keys", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer()), fc.integer({ min: 1, max: 64 }), fc.string(), (value, salt, other) => {
        const key = selectKey({ field: "f", salt }, { f: value, other });
        const hash = key.lastIndexOf("#");
        expect(key.slice(0, hash)).toBe(String(value));
        const n = Number(key.slice(hash + 1));
        expect(Number.isInteger(n) && n >= 0 && n < salt).toBe(true);
      }),
    );
  });
});
