import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, eventsArb, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { sessionizeSpec } from "./sessionize";

const BOUND = 10;
const events = eventsArb(fc.record({ action: fc.constantFrom("view", "pay", "logout") }), { maxTs: 150 });
const paramsArb = fc
  .record({ gapMs: fc.integer({ min: 1, max: 30 }), close: fc.boolean() })
  .map(({ gapMs, close }) => (close ? { gapMs, closeWhen: 'action == "logout"', typeField: "action" } : { gapMs, typeField: "action" }));

/** Reference model: sessions cut where consecutive records are more than gapMs apart, or after a closing record. */
function model(evs: readonly TestEvent[], gapMs: number, closes: boolean): Map<string, JsonObject[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const open = new Map<string, { start: number; last: number; count: number; byType: Record<string, number> }>();
  const out = new Map<string, JsonObject[]>();
  const emit = (key: string, closedBy: string, ts: number) => {
    const s = open.get(key);
    if (!s) return;
    out.set(key, [...(out.get(key) ?? []), { sessionStart: s.start, sessionEnd: s.last, count: s.count, countsByType: s.byType, closedBy, at: ts }]);
    open.delete(key);
  };
  for (const e of sorted) {
    const s = open.get(e.key);
    if (s && e.ts - s.last > gapMs) emit(e.key, "gap", s.last + gapMs);
    const cur = open.get(e.key) ?? { start: e.ts, last: e.ts, count: 0, byType: {} };
    const type = String(e.value.action);
    open.set(e.key, { ...cur, last: e.ts, count: cur.count + 1, byType: { ...cur.byType, [type]: (cur.byType[type] ?? 0) + 1 } });
    if (closes && type === "logout") emit(e.key, "event", e.ts);
  }
  for (const [key, s] of [...open]) emit(key, "gap", s.last + gapMs);
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("sessionize", () => {
  it("emits the sessions a gap-and-close model finds in each key's event-time sequence", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(sessionizeSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map(
          [...byKey(out)].map(([k, list]) => [
            k,
            list.map((o) => ({ sessionStart: o.value.sessionStart, sessionEnd: o.value.sessionEnd, count: o.value.count, countsByType: o.value.countsByType, closedBy: o.value.closedBy, at: o.timestamp })),
          ]),
        );
        expect(got).toEqual(model(evs, params.gapMs, "closeWhen" in params));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(sessionizeSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("keeps state only for keys active within gapMs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 30 }), (gaps, gapMs) => {
        const h = checkStateBound(sessionizeSpec, { gapMs }, gaps, gapMs, () => ({ type: "view" }), (a, b) => expect(a).toBeLessThanOrEqual(b));
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("sessionize boundaries", () => {
  it("a record exactly gapMs after the last one joins the session; one more millisecond starts a new one", () => {
    const h = OperatorTestHarness.forSpec(sessionizeSpec, { gapMs: 100 }, { keyed: true });
    h.processElement({ type: "a" }, 0, "u").processElement({ type: "b" }, 100, "u").processElement({ type: "a" }, 201, "u").endOfInput();
    expect(h.outputOf("out").map((o) => o.value)).toEqual([
      { key: "u", sessionStart: 0, sessionEnd: 100, count: 2, countsByType: { a: 1, b: 1 }, closedBy: "gap" },
      { key: "u", sessionStart: 201, sessionEnd: 201, count: 1, countsByType: { a: 1 }, closedBy: "gap" },
    ]);
  });

  it("closes on the business event, which is the session's last record, and emits at its time", () => {
    const h = OperatorTestHarness.forSpec(sessionizeSpec, { gapMs: 1_000, closeWhen: 'action == "logout"', typeField: "action" }, { keyed: true });
    h.processElement({ action: "login" }, 10, "u").processElement({ action: "logout" }, 20, "u").processElement({ action: "login" }, 30, "u");
    h.processWatermark(25);
    expect(h.outputOf("out").map((o) => [o.timestamp, o.value.closedBy, o.value.count])).toEqual([[20, "event", 2]]);
    expect(h.stateStats().timers).toBeGreaterThan(0);
  });

  it("counts records without the type field under (missing) and closes every session at end of input", () => {
    const h = OperatorTestHarness.forSpec(sessionizeSpec, { gapMs: 50 }, { keyed: true });
    h.processElement({}, 1, "u").processElement({ type: 7 }, 2, "u").endOfInput();
    expect(h.outputOf("out")[0]?.value.countsByType).toEqual({ "(missing)": 1, "7": 1 });
    expect(h.outputOf("out")[0]?.timestamp).toBe(52);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });
});
