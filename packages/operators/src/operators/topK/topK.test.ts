import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, eventsArb, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { topKSpec } from "./topK";

const BOUND = 10;
const events = eventsArb(fc.record({ merchant: fc.constantFrom<string | number>("m1", "m2", "m3", "m4", 5, "5") }), { maxLength: 50 });
const paramsArb = fc.record({ field: fc.constant("merchant"), k: fc.integer({ min: 1, max: 4 }) });

/** Reference model: recount everything after each record, rank fully, report when the ranked values change. */
function model(evs: readonly TestEvent[], k: number): Map<string, JsonObject[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const out = new Map<string, JsonObject[]>();
  const seen = new Map<string, TestEvent[]>();
  const last = new Map<string, string>();
  for (const e of sorted) {
    const mine = [...(seen.get(e.key) ?? []), e];
    seen.set(e.key, mine);
    const counts = new Map<string, { value: string | number; count: number }>();
    for (const x of mine) {
      const v = x.value.merchant as string | number;
      const id = JSON.stringify(v);
      counts.set(id, { value: v, count: (counts.get(id)?.count ?? 0) + 1 });
    }
    const ranked = [...counts.entries()]
      .sort(([ia, a], [ib, b]) => b.count - a.count || (ia < ib ? -1 : 1))
      .slice(0, k)
      .map(([, r]) => r);
    const sig = JSON.stringify(ranked.map((r) => r.value));
    if (sig !== last.get(e.key)) {
      last.set(e.key, sig);
      out.set(e.key, [...(out.get(e.key) ?? []), { ts: e.ts, topK: ranked, total: mine.length }]);
    }
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("topK", () => {
  it("reports the same rankings as a full recount after every record, when the ranking changes", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(topKSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map([...byKey(out)].map(([key, list]) => [key, list.map((o) => ({ ts: o.value.ts, topK: o.value.topK, total: o.value.total }))]));
        expect(got).toEqual(model(evs, params.k));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(topKSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("with ttlMs, keeps state only for keys active within the TTL", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 40 }), (gaps, ttlMs) => {
        const h = checkStateBound(topKSpec, { field: "m", k: 2, ttlMs }, gaps, ttlMs, (i) => ({ m: `v${i % 3}` }), (a, b) => expect(a).toBeLessThanOrEqual(b));
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("topK boundaries", () => {
  const harness = (k: number, ttlMs?: number) => OperatorTestHarness.forSpec(topKSpec, ttlMs === undefined ? { field: "m", k } : { field: "m", k, ttlMs }, { keyed: true });

  it("emits when the ranking changes, not when a leader's count merely grows", () => {
    const h = harness(2);
    // a a b b b a: the second b only ties a (no change), the third overtakes it.
    ["a", "a", "b", "b", "b", "a"].forEach((m, i) => h.processElement({ m }, i, "card"));
    h.endOfInput();
    expect(h.outputOf("out").map((o) => o.value.topK)).toEqual([
      [{ value: "a", count: 1 }],
      [
        { value: "a", count: 2 },
        { value: "b", count: 1 },
      ],
      [
        { value: "b", count: 3 },
        { value: "a", count: 2 },
      ],
      // a ties b at 3 and wins the tie ("a" < "b"): the order changed.
      [
        { value: "a", count: 3 },
        { value: "b", count: 3 },
      ],
    ]);
  });

  it("breaks count ties by the value's JSON, so the ranking is deterministic; 5 and \"5\" are different values", () => {
    const h = harness(3);
    h.processElement({ m: "5" }, 1, "c").processElement({ m: 5 }, 2, "c").endOfInput();
    expect(h.outputOf("out").at(-1)?.value.topK).toEqual([
      { value: "5", count: 1 },
      { value: 5, count: 1 },
    ]);
  });

  it("forgets a key silent for ttlMs and restarts its counts", () => {
    const h = harness(1, 100);
    h.processElement({ m: "a" }, 0, "c").processElement({ m: "a" }, 50, "c").processWatermark(149);
    expect(h.stateStats().keys).toBe(1);
    h.processWatermark(150);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
    h.processElement({ m: "b" }, 200, "c").endOfInput();
    expect(h.outputOf("out").at(-1)?.value).toMatchObject({ topK: [{ value: "b", count: 1 }], total: 1 });
  });

  it("sends records without a scalar value to `errors`", () => {
    const h = harness(1);
    h.processElement({ m: { nested: 1 } }, 1, "c").processElement({}, 2, "c").endOfInput();
    expect(h.outputOf("errors").map((o) => String(o.value.error))).toEqual([expect.stringMatching(/not a string, number or boolean/), expect.stringMatching(/missing/)]);
  });
});
