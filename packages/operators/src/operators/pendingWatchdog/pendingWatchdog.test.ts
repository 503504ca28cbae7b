import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, checkStateBound, eventsArb, jittersArb, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { pendingWatchdogSpec } from "./pendingWatchdog";

const BOUND = 10;
const events = eventsArb(fc.record({ action: fc.constantFrom("open", "close", "other"), orderId: fc.constantFrom("o1", "o2", 3) }));
const paramsArb = fc.integer({ min: 1, max: 40 }).map((deadlineMs) => ({ idField: "orderId", openWhen: 'action == "open"', closeWhen: 'action == "close"', deadlineMs }));

/** Reference model: per key in event-time order; deadlines strictly before a record expire first (ties by the timer's namespace). */
function model(evs: readonly TestEvent[], deadlineMs: number): Map<string, string[]> {
  const sorted = [...evs].sort((a, b) => a.ts - b.ts || (canonicalJson(a.value) < canonicalJson(b.value) ? -1 : 1));
  const open = new Map<string, Map<string, number>>();
  const out = new Map<string, string[]>();
  const push = (key: string, line: string) => out.set(key, [...(out.get(key) ?? []), line]);
  const expire = (key: string, before: number) => {
    const items = open.get(key) ?? new Map<string, number>();
    const due = [...items].filter(([, at]) => at + deadlineMs < before).sort(([ia, a], [ib, b]) => a - b || (ia < ib ? -1 : 1));
    for (const [id, at] of due) {
      items.delete(id);
      push(key, `expired ${id} ${at}`);
    }
  };
  for (const e of sorted) {
    expire(e.key, e.ts);
    const items = open.get(e.key) ?? new Map<string, number>();
    open.set(e.key, items);
    const id = JSON.stringify(e.value.orderId);
    if (e.value.action === "close" && items.has(id)) {
      push(e.key, `closed ${id} ${items.get(id)} ${e.ts}`);
      items.delete(id);
    } else if (e.value.action === "open" && !items.has(id)) items.set(id, e.ts);
  }
  for (const key of open.keys()) expire(key, Number.POSITIVE_INFINITY);
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe("pendingWatchdog", () => {
  it("closes and expires exactly the items an event-time model does", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const out = run(pendingWatchdogSpec, params, arrivalOrder(evs, jitters, BOUND), BOUND);
        const got = new Map(
          [...byKey(out)].map(([k, list]) => [
            k,
            list.map((o) =>
              o.port === "expired"
                ? `expired ${JSON.stringify(o.value.id)} ${String(o.value.openedAt)}`
                : `closed ${JSON.stringify(o.value.id)} ${String(o.value.openedAt)} ${String(o.value.closedAt)}`,
            ),
          ]),
        );
        expect(got).toEqual(model(evs, params.deadlineMs));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  orderedOperatorProperties(pendingWatchdogSpec, paramsArb, events, { bound: BOUND, it, expectEqual: (a, b) => expect(a).toEqual(b) });

  it("never keeps an item past its deadline: live keys <= keys opened within deadlineMs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 40 }), (gaps, deadlineMs) => {
        const params = { idField: "orderId", openWhen: 'action == "open"', closeWhen: 'action == "close"', deadlineMs };
        const h = checkStateBound(pendingWatchdogSpec, params, gaps, deadlineMs, (i) => ({ action: "open", orderId: `o${i}` }), (a, b) => expect(a).toBeLessThanOrEqual(b));
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("pendingWatchdog boundaries", () => {
  const params = { idField: "orderId", openWhen: 'status == "PENDING"', closeWhen: 'status == "COMPLETED"', deadlineMs: 1_000 };
  const harness = () => OperatorTestHarness.forSpec(pendingWatchdogSpec, params, { keyed: true });

  it("a close exactly at the deadline is in time: timer deleted, entry removed", () => {
    const h = harness();
    h.processElement({ orderId: "o1", status: "PENDING" }, 0, "cust").processElement({ orderId: "o1", status: "COMPLETED" }, 1_000, "cust").processWatermark(1_000);
    expect(h.output().map((o) => [o.port, o.value.id, o.value.durationMs])).toEqual([["out", "o1", 1_000]]);
    expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0, timers: 0 });
  });

  it("expires an item not closed by its deadline on `expired`, with its opening record as evidence, and forgets it", () => {
    const h = harness();
    h.processElement({ id: "tx9", orderId: "o1", status: "PENDING" }, 0, "cust").processElement({ orderId: "o1", status: "COMPLETED" }, 1_001, "cust").endOfInput();
    expect(h.output().map((o) => [o.port, o.timestamp, o.value])).toEqual([
      ["expired", 1_000, { key: "cust", id: "o1", openedAt: 0, deadline: 1_000, event: { id: "tx9", orderId: "o1", status: "PENDING" }, evidence: { records: [{ id: "o1", ts: 0 }], total: 1 } }],
    ]);
  });

  it("each item has its own timer: closing one keeps the other's deadline even at the same time", () => {
    const h = harness();
    h.processElement({ orderId: "a", status: "PENDING" }, 0, "cust").processElement({ orderId: "b", status: "PENDING" }, 0, "cust").processElement({ orderId: "a", status: "COMPLETED" }, 10, "cust").endOfInput();
    expect(h.output().map((o) => [o.port, o.value.id])).toEqual([
      ["out", "a"],
      ["expired", "b"],
    ]);
  });

  it("a redelivered open does not push the deadline back; an open record without an id goes to `errors`", () => {
    const h = harness();
    h.processElement({ orderId: "a", status: "PENDING" }, 0, "cust").processElement({ orderId: "a", status: "PENDING" }, 900, "cust").processElement({ status: "PENDING" }, 901, "cust").endOfInput();
    expect(h.outputOf("expired").map((o) => o.value.deadline)).toEqual([1_000]);
    expect(String(h.outputOf("errors")[0]?.value.error)).toMatch(/field "orderId" is missing/);
  });
});
