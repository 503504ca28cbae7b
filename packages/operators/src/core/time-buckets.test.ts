import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TimeBuckets } from "./time-buckets";

interface Bucket {
  at: number;
  items: number[];
}

describe("TimeBuckets", () => {
  it("keeps one bucket per time and hands them over oldest first, against a Map (ring collisions, reuse)", () => {
    // Times 4096 apart share a slot of the recent ring; above 2^31, as millisecond timestamps.
    const timeArb = fc.tuple(fc.nat(3), fc.nat(3)).map(([lap, off]) => 1_700_000_000_000 + lap * 4096 + off);
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.tuple(fc.constant("add" as const), timeArb, fc.nat(99)), fc.tuple(fc.constant("take" as const), timeArb, fc.constant(0))), { maxLength: 200 }), (ops) => {
        const buckets = new TimeBuckets<Bucket>((at) => ({ at, items: [] }), 2);
        const model = new Map<number, number[]>();
        for (const [op, time, item] of ops) {
          if (op === "add") {
            buckets.of(time).items.push(item);
            model.set(time, [...(model.get(time) ?? []), item]);
          } else {
            const taken: Array<[number, number[]]> = [];
            for (let t = buckets.oldestTime(); t !== undefined && t <= time; t = buckets.oldestTime()) {
              const b = buckets.takeOldest();
              expect(b.at).toBe(t);
              taken.push([b.at, [...b.items]]);
              b.items.length = 0;
              buckets.recycle(b);
            }
            const due = [...model].filter(([t]) => t <= time).sort((a, b) => a[0] - b[0]);
            expect(taken).toEqual(due);
            for (const [t] of due) model.delete(t);
          }
          expect(buckets.size).toBe(model.size);
          expect(new Map([...buckets.values()].map((b) => [b.at, b.items]))).toEqual(model);
        }
      }),
      { numRuns: 300 },
    );
  });
});
