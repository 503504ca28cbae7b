import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, eventsArb, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { timeoutSpec } from "./timeout";

const BOUND = 10;
const events = eventsArb(fc.record({ action: fc.constantFrom("login", "tx", "other") }));
const paramsArb = fc.integer({ min: 1, max: 30 }).map((afterMs) => ({ startWhen: 'action == "login"', endWhen: 'action == "tx"', afterMs }));

/** Reference model: per key, in (ts, canonical JSON) order; a deadline passes before any later record. */
function model(evs: readonly TestEvent[], afterMs: number): Map<string, string[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const pending = new Map<string, { startedAt: number; starts: number }>();
  const out = new Map<string, string[]>();
  const alert = (key: string, p: { startedAt: number; starts: number }) => {
    out.set(key, [...(out.get(key) ?? []), `${p.startedAt}+${afterMs}:${p.starts}`]);
    pending.delete(key);
  };
  for (const e of sorted) {
    const p = pending.get(e.key);
    if (p && p.startedAt + afterMs < e.ts) alert(e.key, p);
    const q = pending.get(e.key);
    if (q && e.value.action === "tx") pending.delete(e.key);
    else if (e.value.action === "login") pending.set(e.key, q ? { ...q, starts: q.starts + 1 } : { startedAt: e.ts, starts: 1 });
  }
  for (const [key, p] of [...pending]) alert(key, p);
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("timeout", () => {
  it("alerts exactly for the starts a model of the event-time sequence leaves unanswered", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(timeoutSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map(
          [...byKey(out)].map(([k, list]) => [k, list.map((o) => `${String(o.value.startedAt)}+${String(o.value.afterMs)}:${String((o.value.evidence as { total: number }).total)}`)]),
        );
        expect(got).toEqual(model(evs, params.afterMs));
        for (const o of out) expect(o.timestamp).toBe(Number(o.value.startedAt) + params.afterMs);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(timeoutSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("clears state on resolution and on alert: live keys <= keys started within afterMs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 30 }), (gaps, afterMs) => {
        const params = { startWhen: 'action == "login"', endWhen: 'action == "tx"', afterMs };
        const h = checkStateBound(timeoutSpec, params, gaps, afterMs, () => ({ action: "login" }), (a, b) => expect(a).toBeLessThanOrEqual(b));
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("timeout boundaries", () => {
  const params = { startWhen: 'action == "login"', endWhen: 'action == "tx"', afterMs: 300_000 };
  const harness = () => OperatorTestHarness.forSpec(timeoutSpec, params, { keyed: true });

  it("an end exactly afterMs after the start is in time; one millisecond later is not", () => {
    const inTime = harness();
    inTime.processElement({ action: "login" }, 0, "acc").processElement({ action: "tx" }, 300_000, "acc").endOfInput();
    expect(inTime.output()).toEqual([]);
    const tooLate = harness();
    tooLate.processElement({ id: "L1", action: "login" }, 0, "acc").processElement({ action: "tx" }, 300_001, "acc").endOfInput();
    expect(tooLate.outputOf("out").map((o) => o.value)).toEqual([
      { key: "acc", ts: 300_000, type: "TIMEOUT", startedAt: 0, afterMs: 300_000, event: { id: "L1", action: "login" }, evidence: { records: [{ id: "L1", ts: 0 }], total: 1 } },
    ]);
  });

  it("an end arriving before its start (out of order) still resolves it", () => {
    const h = harness();
    h.processElement({ action: "tx" }, 10, "acc").processElement({ action: "login" }, 5, "acc").endOfInput();
    expect(h.output()).toEqual([]);
  });

  it("keeps the clock of the first start; later starts only join the evidence", () => {
    const h = harness();
    h.processElement({ id: "a", action: "login" }, 0, "acc").processElement({ id: "b", action: "login" }, 200_000, "acc").endOfInput();
    const [alert] = h.outputOf("out");
    expect(alert?.timestamp).toBe(300_000);
    expect(alert?.value.evidence).toEqual({ records: [{ id: "a", ts: 0 }, { id: "b", ts: 200_000 }], total: 2 });
  });

  it("fires on the watermark, not before, and forgets the key afterwards", () => {
    const h = harness();
    h.processElement({ action: "login" }, 0, "acc").processWatermark(299_999);
    expect(h.output()).toEqual([]);
    h.processWatermark(300_000);
    expect(h.outputOf("out")).toHaveLength(1);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });
});
