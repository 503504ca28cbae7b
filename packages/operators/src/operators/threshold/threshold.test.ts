import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, eventsArb, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { thresholdSpec } from "./threshold";

const BOUND = 10;
const events = eventsArb(fc.record({ v: fc.integer({ min: 0, max: 10 }) }));
const paramsArb = fc
  .record({ above: fc.integer({ min: 2, max: 8 }), gap: fc.integer({ min: 0, max: 4 }) })
  .map(({ above, gap }) => ({ expression: "v", above, recoverBelow: above - gap }));

/** Reference model: the two-state machine run over each key's events in (ts, canonical JSON) order. */
function model(evs: readonly TestEvent[], above: number, recoverBelow: number): Map<string, string[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const alerting = new Map<string, boolean>();
  const out = new Map<string, string[]>();
  for (const e of sorted) {
    const v = Number(e.value.v);
    const list = out.get(e.key) ?? [];
    if (!alerting.get(e.key) && v > above) {
      alerting.set(e.key, true);
      list.push(`EXCEEDED@${e.ts}:${v}`);
    } else if (alerting.get(e.key) && v < recoverBelow) {
      alerting.set(e.key, false);
      list.push(`RECOVERED@${e.ts}:${v}`);
    }
    if (list.length > 0) out.set(e.key, list);
  }
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("threshold", () => {
  it("emits the transitions of a two-state machine over each key's events in event-time order", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(thresholdSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map(
          [...byKey(out)].map(([k, list]) => [k, list.map((o) => `${o.value.type === "RECOVERED" ? "RECOVERED" : "EXCEEDED"}@${String(o.value.ts)}:${String(o.value.value)}`)]),
        );
        expect(got).toEqual(model(evs, params.above, params.recoverBelow));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(thresholdSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("keeps no state for keys in the normal state", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 100 }), (gaps) => {
        const h = checkStateBound(thresholdSpec, { expression: "v", above: 100, recoverBelow: 50 }, gaps, 0, (i) => ({ v: i % 100 }), (a, b) => expect(a).toBeLessThanOrEqual(b));
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("threshold boundaries", () => {
  const run1 = (values: number[], above = 100, recoverBelow = 80) => {
    const h = OperatorTestHarness.forSpec(thresholdSpec, { expression: "amount", above, recoverBelow }, { keyed: true });
    values.forEach((amount, i) => h.processElement({ id: `r${i}`, amount }, i + 1, "k"));
    h.endOfInput();
    return h;
  };

  it("does not flap: one alert for a value hovering at the line, one recovery below the lower line", () => {
    const h = run1([99, 101, 99, 101, 100, 81, 80, 101, 79, 120]);
    expect(h.outputOf("out").map((o) => [o.value.type, o.value.value])).toEqual([
      ["THRESHOLD_EXCEEDED", 101],
      ["RECOVERED", 79],
      ["THRESHOLD_EXCEEDED", 120],
    ]);
  });

  it("is strict on both lines: exactly `above` does not alert, exactly `recoverBelow` does not recover", () => {
    expect(run1([100, 80]).outputOf("out")).toEqual([]);
    expect(run1([101, 80]).outputOf("out").map((o) => o.value.type)).toEqual(["THRESHOLD_EXCEEDED"]);
  });

  it("carries evidence: the crossing record, and for a recovery the record that raised the alert too", () => {
    const [exceeded, recovered] = run1([101, 50]).outputOf("out").map((o) => o.value);
    expect(exceeded).toMatchObject({ key: "k", ts: 1, above: 100, event: { id: "r0", amount: 101 }, evidence: { records: [{ id: "r0", ts: 1 }], total: 1 } });
    expect(recovered).toMatchObject({ ts: 2, exceededAt: 1, recoverBelow: 80, evidence: { records: [{ id: "r0", ts: 1 }, { id: "r1", ts: 2 }], total: 2 } });
  });

  it("sends records on which the expression fails or is not a number to `errors`", () => {
    const h = OperatorTestHarness.forSpec(thresholdSpec, { expression: "amount", above: 1, recoverBelow: 0 }, { keyed: true, nodeId: "thr" });
    h.processElement({ other: 1 }, 1, "k").processElement({ amount: "high" }, 2, "k").endOfInput();
    const errors = h.outputOf("errors").map((o) => String(o.value.error));
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatch(/node "thr".*"amount" is missing/);
    expect(errors[1]).toMatch(/not a number/);
  });

  it("refuses recoverBelow above `above` and warns when they are equal", () => {
    const bad = thresholdSpec.params.safeParse({ expression: "v", above: 10, recoverBelow: 11 });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.path).toEqual(["recoverBelow"]);
    const eq = thresholdSpec.params.parse({ expression: "v", above: 10, recoverBelow: 10 });
    expect(thresholdSpec.check?.(eq, { nodeId: "t" })).toEqual([expect.objectContaining({ severity: "warning", param: "recoverBelow" })]);
    expect(thresholdSpec.check?.(eq, { nodeId: "t", inputFields: ["amount"] })[0]?.message).toMatch(/unknown field "v"/);
  });
});
