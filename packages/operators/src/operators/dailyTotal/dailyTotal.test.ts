import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { dailyTotalSpec } from "./dailyTotal";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BOUND = HOUR;

/** Payments over four days, on a 15-minute grid so that midnights and ties are hit. */
const events = fc
  .array(fc.record({ key: fc.constantFrom("a", "b", "c"), slot: fc.integer({ min: 0, max: 4 * 96 }), amount: fc.integer({ min: 1, max: 60 }) }), { maxLength: 40 })
  .map((list) => list.map((e, i): TestEvent => ({ key: e.key, ts: e.slot * 15 * 60_000, value: { id: `p${i}`, amount: e.amount } })).sort((a, b) => a.ts - b.ts));

/** Zones with fixed offsets, whose business day is plain arithmetic: an independent model. */
const zones = [
  { timeZone: "UTC", offsetMs: 0 },
  { timeZone: "Asia/Kolkata", offsetMs: 5.5 * HOUR },
  { timeZone: "America/Bogota", offsetMs: -5 * HOUR },
] as const;
const paramsArb = fc.record({ limit: fc.integer({ min: 10, max: 150 }), zone: fc.constantFrom(...zones) });

function model(evs: readonly TestEvent[], limit: number, offsetMs: number): Map<string, JsonObject[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const state = new Map<string, { day: number; total: number; count: number; alerted: boolean }>();
  const out = new Map<string, JsonObject[]>();
  for (const e of sorted) {
    const day = Math.floor((e.ts + offsetMs) / DAY);
    const prev = state.get(e.key);
    const s = prev && prev.day === day ? prev : { day, total: 0, count: 0, alerted: false };
    const next = { ...s, total: s.total + Number(e.value.amount), count: s.count + 1 };
    if (!next.alerted && next.total > limit) {
      next.alerted = true;
      const dayString = new Date(day * DAY).toISOString().slice(0, 10);
      out.set(e.key, [...(out.get(e.key) ?? []), { ts: e.ts, day: dayString, total: next.total, count: next.count }]);
    }
    state.set(e.key, next);
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("dailyTotal", () => {
  it("alerts once per key and business day, when the day's sum first exceeds the limit", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, { limit, zone }, jitters) => {
        const out = run(dailyTotalSpec, { field: "amount", limit, timeZone: zone.timeZone }, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map([...byKey(out)].map(([k, list]) => [k, list.map((o) => ({ ts: o.value.ts, day: o.value.day, total: o.value.total, count: o.value.count }))]));
        expect(got).toEqual(model(evs, limit, zone.offsetMs));
        for (const o of out) expect((o.value.evidence as { total: number }).total).toBe(o.value.count);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(
    dailyTotalSpec,
    paramsArb.map(({ limit, zone }) => ({ field: "amount", limit, timeZone: zone.timeZone })),
    events,
    { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) },
  );

  it("frees each key at its next local midnight", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 * HOUR }), { minLength: 1, maxLength: 80 }), (gaps) => {
        const h = checkStateBound(dailyTotalSpec, { field: "amount", limit: 1e9, timeZone: "UTC" }, gaps, DAY, () => ({ amount: 1 }), (a, b) => expect(a).toBeLessThanOrEqual(b), { bound: BOUND });
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("dailyTotal in a daylight-saving zone (America/New_York)", () => {
  const ny = (iso: string) => Date.parse(iso);
  const harness = (limit = 100) => OperatorTestHarness.forSpec(dailyTotalSpec, { field: "amount", limit, timeZone: "America/New_York" }, { keyed: true });

  it("2026-03-08 is a 23-hour day: 00:30 EST and 23:30 EDT are the same business day, 00:00 EDT the next", () => {
    const h = harness();
    h.processElement({ id: "1", amount: 60 }, ny("2026-03-08T00:30:00-05:00"), "acc")
      .processElement({ id: "2", amount: 50 }, ny("2026-03-08T23:30:00-04:00"), "acc")
      .processElement({ id: "3", amount: 99 }, ny("2026-03-09T00:00:00-04:00"), "acc")
      .endOfInput();
    expect(h.outputOf("out").map((o) => o.value)).toEqual([
      expect.objectContaining({ key: "acc", day: "2026-03-08", total: 110, limit: 100, count: 2, evidence: { records: [{ id: "1", ts: ny("2026-03-08T05:30:00Z") }, { id: "2", ts: ny("2026-03-09T03:30:00Z") }], total: 2 } }),
    ]);
  });

  it("2026-11-01 is a 25-hour day: both 01:30s and 23:59 EST count together", () => {
    const h = harness();
    h.processElement({ amount: 40 }, ny("2026-11-01T01:30:00-04:00"), "acc")
      .processElement({ amount: 40 }, ny("2026-11-01T01:30:00-05:00"), "acc")
      .processElement({ amount: 40 }, ny("2026-11-01T23:59:00-05:00"), "acc")
      .endOfInput();
    expect(h.outputOf("out").map((o) => [o.value.day, o.value.total])).toEqual([["2026-11-01", 120]]);
  });

  it("resets at local midnight with a timer at the next midnight (04:00 or 05:00 UTC around the switch)", () => {
    const h = harness();
    h.processElement({ amount: 90 }, ny("2026-03-08T12:00:00-04:00"), "acc").processWatermark(ny("2026-03-09T03:59:59.999Z"));
    expect(h.stateStats().keys).toBe(1);
    h.processWatermark(ny("2026-03-09T04:00:00Z"));
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
    h.processElement({ amount: 90 }, ny("2026-03-09T04:00:01Z"), "acc").endOfInput();
    expect(h.outputOf("out")).toEqual([]);
  });

  it("alerts only when strictly above the limit, and once", () => {
    const h = harness(100);
    h.processElement({ amount: 100 }, 1, "acc").processElement({ amount: 1 }, 2, "acc").processElement({ amount: 500 }, 3, "acc").endOfInput();
    expect(h.outputOf("out").map((o) => o.value.total)).toEqual([101]);
  });

  it("accepts decimal strings and sends non-numbers to `errors`", () => {
    const h = harness(100);
    h.processElement({ amount: "100.50" }, 1, "acc").processElement({ amount: "n/a" }, 2, "acc").endOfInput();
    expect(h.outputOf("out").map((o) => o.value.total)).toEqual([100.5]);
    expect(String(h.outputOf("errors")[0]?.value.error)).toMatch(/field "amount" is "n\/a", not a number/);
  });

  it("checks its field params against the input's fields, with a suggestion", () => {
    const params = dailyTotalSpec.params.parse({ field: "amout", limit: 1, timeZone: "UTC" });
    expect(dailyTotalSpec.check?.(params, { nodeId: "d", inputFields: ["amount", "card"] })).toEqual([
      expect.objectContaining({ severity: "error", param: "field", message: expect.stringContaining('unknown field "amout" — did you mean "amount"?') }),
      expect.objectContaining({ severity: "warning", param: "idField" }),
    ]);
    expect(dailyTotalSpec.check?.(params, { nodeId: "d" })).toEqual([]);
  });

  it("refuses an unknown time zone", () => {
    expect(dailyTotalSpec.params.safeParse({ field: "amount", limit: 1, timeZone: "Mars/Olympus" }).success).toBe(false);
  });
});
