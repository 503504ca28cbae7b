import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { structuringSpec } from "./structuring";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BOUND = HOUR;

const events = fc
  .array(fc.record({ key: fc.constantFrom("a", "b", "c"), slot: fc.integer({ min: 0, max: 3 * 48 }), amount: fc.integer({ min: 1, max: 14_000 }) }), { maxLength: 40 })
  .map((list) => list.map((e, i): TestEvent => ({ key: e.key, ts: e.slot * 30 * 60_000, value: { id: `t${i}`, amount: e.amount } })).sort((a, b) => a.ts - b.ts));

const paramsArb = fc.record({
  field: fc.constant("amount"),
  below: fc.constantFrom(5_000, 10_000),
  countAtLeast: fc.integer({ min: 1, max: 4 }),
  totalAbove: fc.integer({ min: 1_000, max: 20_000 }),
  timeZone: fc.constantFrom("UTC", "Asia/Riyadh"),
});
const offsetOf = (zone: string) => (zone === "UTC" ? 0 : 3 * HOUR);

/** Reference model: per key and day, the sub-threshold records in event-time order; alert once when both counts are met. */
function model(evs: readonly TestEvent[], p: { below: number; countAtLeast: number; totalAbove: number; timeZone: string }): Map<string, JsonObject[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const days = new Map<string, { count: number; total: number; alerted: boolean; ids: string[] }>();
  const out = new Map<string, JsonObject[]>();
  for (const e of sorted) {
    const amount = Number(e.value.amount);
    if (amount >= p.below) continue;
    const day = Math.floor((e.ts + offsetOf(p.timeZone)) / DAY);
    const id = `${e.key}|${day}`;
    const s = days.get(id) ?? { count: 0, total: 0, alerted: false, ids: [] };
    if (s.alerted) continue;
    const next = { count: s.count + 1, total: s.total + amount, alerted: false, ids: [...s.ids, String(e.value.id)] };
    if (next.count >= p.countAtLeast && next.total > p.totalAbove) {
      next.alerted = true;
      out.set(e.key, [...(out.get(e.key) ?? []), { ts: e.ts, day: new Date(day * DAY).toISOString().slice(0, 10), count: next.count, total: next.total, ids: next.ids }]);
    }
    days.set(id, next);
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("structuring", () => {
  it("alerts once per key and day when enough sub-threshold records exceed the total", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(structuringSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map(
          [...byKey(out)].map(([k, list]) => [
            k,
            list.map((o) => ({ ts: o.value.ts, day: o.value.day, count: o.value.count, total: o.value.total, ids: (o.value.evidence as { records: Array<{ id: string }> }).records.map((r) => r.id) })),
          ]),
        );
        expect(got).toEqual(model(evs, params));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(structuringSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("frees each key at its next local midnight", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 * HOUR }), { minLength: 1, maxLength: 80 }), (gaps) => {
        const params = { field: "amount", below: 10_000, countAtLeast: 3, totalAbove: 1e9, timeZone: "UTC" };
        const h = checkStateBound(structuringSpec, params, gaps, DAY, () => ({ amount: 9_000 }), (a, b) => expect(a).toBeLessThanOrEqual(b), { bound: BOUND });
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("structuring boundaries", () => {
  const params = { field: "amount", below: 10_000, countAtLeast: 3, totalAbove: 10_000, timeZone: "Asia/Riyadh" };

  it("the seeds' example: three transfers below 10 000 SAR the same Riyadh day that together exceed it", () => {
    const h = OperatorTestHarness.forSpec(structuringSpec, params, { keyed: true });
    const at = (iso: string) => Date.parse(iso);
    h.processElement({ id: "a", amount: 9_500 }, at("2026-05-01T08:00:00+03:00"), "acc")
      .processElement({ id: "big", amount: 10_000 }, at("2026-05-01T09:00:00+03:00"), "acc") // at the threshold: not structuring
      .processElement({ id: "b", amount: 400 }, at("2026-05-01T10:00:00+03:00"), "acc")
      .processElement({ id: "c", amount: 200 }, at("2026-05-01T23:59:00+03:00"), "acc")
      .processElement({ id: "d", amount: 9_000 }, at("2026-05-02T00:00:00+03:00"), "acc") // next day
      .endOfInput();
    expect(h.outputOf("out").map((o) => o.value)).toEqual([
      {
        key: "acc",
        ts: at("2026-05-01T23:59:00+03:00"),
        day: "2026-05-01",
        count: 3,
        total: 10_100,
        below: 10_000,
        totalAbove: 10_000,
        event: { id: "c", amount: 200 },
        evidence: {
          records: [
            { id: "a", ts: at("2026-05-01T08:00:00+03:00") },
            { id: "b", ts: at("2026-05-01T10:00:00+03:00") },
            { id: "c", ts: at("2026-05-01T23:59:00+03:00") },
          ],
          total: 3,
        },
      },
    ]);
  });

  it("does not alert on a total exactly at totalAbove, nor twice the same day", () => {
    const h = OperatorTestHarness.forSpec(structuringSpec, { ...params, countAtLeast: 2 }, { keyed: true });
    h.processElement({ amount: 5_000 }, 1, "acc").processElement({ amount: 5_000 }, 2, "acc").processElement({ amount: 1 }, 3, "acc").processElement({ amount: 9_999 }, 4, "acc").endOfInput();
    expect(h.outputOf("out").map((o) => o.value.total)).toEqual([10_001]);
  });
});
