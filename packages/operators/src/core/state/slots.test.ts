// KeySlots against a Map model: lookups, adds (all three ways), deletes with backward shift under
// churn and rehashes, and the hints callers read ahead (homeOf, touch) never change an answer.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashKey, KeySlots, SlotSchedule } from "./slots";

/** Keys from a small alphabet, so that runs collide in the table and deletes shift entries back. */
const keyArb = fc.string({ unit: fc.constantFrom("a", "b", "c", "é", "\u4e00"), minLength: 0, maxLength: 4 });
const opArb = fc.oneof(
  fc.record({ op: fc.constant("find" as const), key: keyArb }),
  fc.record({ op: fc.constant("findOrAdd" as const), key: keyArb }),
  fc.record({ op: fc.constant("findOrAddHashed" as const), key: keyArb }),
  fc.record({ op: fc.constant("findThenAddMissing" as const), key: keyArb }),
  fc.record({ op: fc.constant("findHashedThenAddMissing" as const), key: keyArb }),
  fc.record({ op: fc.constant("delete" as const), key: keyArb }),
);

describe("KeySlots", () => {
  it("answers as a Map from keys to stable slots, under adds, deletes and rehashes", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 400 }), (ops) => {
        const slots = new KeySlots();
        const model = new Map<string, number>();
        for (const { op, key } of ops) {
          const expected = model.get(key);
          // Read-ahead hints are side-effect free.
          slots.homeOf(hashKey(key));
          if (expected !== undefined) slots.touch(expected);
          switch (op) {
            case "find":
              expect(slots.find(key)).toBe(expected ?? -1);
              break;
            case "findOrAdd":
            case "findOrAddHashed": {
              const slot = op === "findOrAdd" ? slots.findOrAdd(key) : slots.findOrAddHashed(key, hashKey(key));
              expect(slots.added).toBe(expected === undefined);
              if (expected !== undefined) expect(slot).toBe(expected);
              else {
                expect([...model.values()]).not.toContain(slot);
                model.set(key, slot);
              }
              break;
            }
            case "findThenAddMissing":
            case "findHashedThenAddMissing": {
              const found = op === "findThenAddMissing" ? slots.find(key) : slots.findHashed(key, hashKey(key));
              expect(found).toBe(expected ?? -1);
              if (found < 0) {
                const slot = slots.addMissing(key);
                expect([...model.values()]).not.toContain(slot);
                model.set(key, slot);
              }
              break;
            }
            case "delete":
              if (expected !== undefined) {
                slots.delete(expected);
                model.delete(key);
              }
              break;
          }
          expect(slots.size).toBe(model.size);
        }
        for (const [key, slot] of model) {
          expect(slots.find(key)).toBe(slot);
          expect(slots.keyAt(slot)).toBe(key);
        }
        expect([...slots.slots()]).toEqual([...model.values()].sort((a, b) => a - b));
        for (const slot of slots.slots()) expect(slot).toBeLessThan(slots.capacity);
      }),
      { numRuns: 300 },
    );
  });

  it("addMissing refuses a key that the last find did not miss, and a stale miss", () => {
    const slots = new KeySlots();
    expect(() => slots.addMissing("a")).toThrow(/addMissing/);
    expect(slots.find("a")).toBe(-1);
    expect(() => slots.addMissing("b")).toThrow(/addMissing/);
    expect(slots.find("a")).toBe(-1);
    const b = slots.findOrAdd("b");
    expect(() => slots.addMissing("a")).toThrow(/addMissing/);
    expect(slots.find("c")).toBe(-1);
    slots.delete(b);
    expect(() => slots.addMissing("c")).toThrow(/addMissing/);
    expect(slots.find("c")).toBe(-1);
    const c = slots.addMissing("c");
    expect(slots.find("c")).toBe(c);
    expect(() => slots.addMissing("c")).toThrow(/addMissing/);
  });
});

describe("SlotSchedule", () => {
  it("hands over due buckets, oldest first, each in the order added, the same through due and dueLists", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(50), fc.integer({ min: 0, max: 200 })), { maxLength: 100 }), fc.array(fc.integer({ min: 0, max: 250 }), { maxLength: 5 }), (adds, marks) => {
        const a = new SlotSchedule(10);
        const b = new SlotSchedule(10);
        for (const [slot, time] of adds) {
          a.add(slot, time);
          b.add(slot, time);
        }
        const sorted = [...marks].sort((x, y) => x - y);
        for (const wm of sorted) {
          const viaDue: number[] = [];
          a.due(wm, (s) => viaDue.push(s));
          const viaLists: number[] = [];
          b.dueLists(wm, (list, n) => viaLists.push(...list.subarray(0, n)));
          expect(viaLists).toEqual(viaDue);
          expect(b.size).toBe(a.size);
        }
        // Everything handed over by the last watermark: exactly the adds whose bucket ended by then.
        const last = sorted.at(-1);
        const remaining = adds.filter(([, t]) => last === undefined || (Math.floor(t / 10) + 1) * 10 > last).length;
        expect(a.size).toBe(remaining);
      }),
      { numRuns: 200 },
    );
  });

  it("exact times whose low bits coincide stay apart, added and handed over interleaved (buckets reused)", () => {
    // Times 4096 apart share a slot of the recent-bucket ring; above 2^31, as millisecond timestamps.
    const timeArb = fc.tuple(fc.nat(3), fc.nat(2)).map(([lap, off]) => 1_700_000_000_000 + lap * 4096 + off);
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.tuple(fc.constant("add" as const), fc.nat(20), timeArb), fc.tuple(fc.constant("due" as const), fc.nat(20), timeArb)), { maxLength: 200 }), (ops) => {
        const schedule = new SlotSchedule(0);
        const model: Array<[number, number]> = [];
        let watermark = Number.NEGATIVE_INFINITY;
        for (const [op, slot, time] of ops) {
          if (op === "add") {
            schedule.add(slot, time);
            model.push([slot, time]);
            continue;
          }
          watermark = Math.max(watermark, time);
          const handed: number[] = [];
          schedule.dueLists(watermark, (list, n) => handed.push(...list.subarray(0, n)));
          // Oldest time first, each time's slots in the order added.
          const due = model.filter(([, t]) => t <= watermark).sort((x, y) => x[1] - y[1]);
          expect(handed).toEqual(due.map(([s]) => s));
          for (const d of due) model.splice(model.indexOf(d), 1);
          expect(schedule.size).toBe(model.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
