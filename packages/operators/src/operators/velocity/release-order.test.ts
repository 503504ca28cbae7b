import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS } from "../shared/test-support";
import { ReleaseOrder, RepeatedSlots } from "./release-order";

/** The order the handle storage releases in: key (`<`), canonical JSON, arrival. */
function reference(keys: readonly string[], values: readonly JsonObject[]): number[] {
  return keys
    .map((_, i) => i)
    .sort((a, b) => {
      const ka = keys[a] as string;
      const kb = keys[b] as string;
      if (ka !== kb) return ka < kb ? -1 : 1;
      const ca = canonicalJson(values[a] as JsonObject);
      const cb = canonicalJson(values[b] as JsonObject);
      return ca < cb ? -1 : ca > cb ? 1 : a - b;
    });
}

// Keys that share long prefixes, are prefixes of each other, differ only past the characters a code
// holds, repeat, or carry code units of 255 and above (the comparator fallback).
const unitArb = fc.constantFrom("a", "b", "0", "9", "-", "\u00fe", "\u00ff", "\u0100", "\u00e9", "\ud83d\ude00", "");
const keyArb = fc.oneof(
  fc.array(unitArb, { maxLength: 12 }).map((units) => `card-${units.join("")}`),
  fc.nat({ max: 2_000_000 }).map((i) => `card-${i}`),
  fc.string({ maxLength: 4 }),
);
const valueArb: fc.Arbitrary<JsonObject> = fc.record({ amount: fc.integer({ min: 0, max: 3 }), note: fc.constantFrom("x", "y") });

describe("velocity release order", () => {
  it("is the order of key, canonical JSON and arrival, for any keys", () => {
    const order = new ReleaseOrder();
    fc.assert(
      fc.property(fc.array(fc.tuple(keyArb, valueArb), { minLength: 1, maxLength: 300 }), (records) => {
        const keys = records.map(([k]) => k);
        const values = records.map(([, v]) => v);
        expect([...order.sort(keys, values, keys.length)]).toEqual(reference(keys, values));
      }),
      { numRuns: 4 * NUM_RUNS },
    );
  });

  it("orders more records than a code's index bits leave six characters for (fewer characters, more ties)", () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `card-${(i * 7919) % 1237}-${i % 3}`);
    const values = keys.map((_, i) => ({ i: i % 5 }));
    expect([...new ReleaseOrder().sort(keys, values, keys.length)]).toEqual(reference(keys, values));
  });
});

describe("velocity repeated slots", () => {
  it("tells whether any slot repeats, call after call (stamped, never cleared) and past its first size", () => {
    const repeated = new RepeatedSlots();
    fc.assert(
      fc.property(fc.array(fc.array(fc.nat({ max: 3_000 }), { maxLength: 400 }), { maxLength: 8 }), (calls) => {
        for (const slots of calls) expect(repeated.any(Int32Array.from(slots), slots.length)).toBe(new Set(slots).size < slots.length);
      }),
      { numRuns: 4 * NUM_RUNS },
    );
  });

  it("reads only the first n slots", () => {
    expect(new RepeatedSlots().any(Int32Array.from([1, 2, 3, 1]), 3)).toBe(false);
    expect(new RepeatedSlots().any(Int32Array.from([1, 2, 3, 1]), 4)).toBe(true);
  });
});
