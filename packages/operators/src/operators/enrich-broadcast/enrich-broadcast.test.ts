import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { NUM_RUNS, arrivalOrder, jittersArb, run, runWithRestore, type TestEvent } from "../shared/test-support";
import { enrichBroadcastSpec } from "./enrich-broadcast";

const BOUND = 10;
const unkeyed = { keyed: false };
const params = { keyField: "merchantId", referenceKeyField: "id", onMiss: "miss-port" as const };

const events = fc
  .array(fc.record({ ref: fc.boolean(), ts: fc.integer({ min: 0, max: 100 }), merchant: fc.constantFrom("m1", "m2", 3) }), { maxLength: 40 })
  .map((list) =>
    list
      .map((e, i): TestEvent => (e.ref ? { key: "", ts: e.ts, port: "reference", value: { id: e.merchant, mcc: i } } : { key: "", ts: e.ts, value: { txId: `t${i}`, merchantId: e.merchant } }))
      .sort((a, b) => a.ts - b.ts),
  );

/** Reference model, in arrival order: the table holds per key the reference record with the greatest timestamp (later arrival on ties). */
function model(arrivals: readonly TestEvent[]): Array<{ port: string; txId: string; mcc: number | null }> {
  const table = new Map<string, TestEvent>();
  const out: Array<{ port: string; txId: string; mcc: number | null }> = [];
  for (const e of arrivals) {
    if (e.port === "reference") {
      const k = String(e.value.id);
      const held = table.get(k);
      if (!held || held.ts <= e.ts) table.set(k, e);
    } else {
      const ref = table.get(String(e.value.merchantId));
      out.push({ port: ref ? "out" : "miss", txId: String(e.value.txId), mcc: ref ? Number(ref.value.mcc) : null });
    }
  }
  return out;
}

describe("enrich.broadcast", () => {
  it("enriches each record with the latest reference record seen for its key, misses to `miss`", () => {
    fc.assert(
      fc.property(events, jittersArb(BOUND), (evs, jitters) => {
        const arrivals = arrivalOrder(evs, jitters, BOUND);
        const out = run(enrichBroadcastSpec, params, arrivals, BOUND, unkeyed);
        const got = out.map((o) => ({ port: o.port, txId: String(o.value.txId), mcc: o.port === "out" ? Number((o.value.reference as { mcc: number }).mcc) : null }));
        expect(got).toEqual(model(arrivals));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("snapshot and restore (the reference table is operator state) equals an uninterrupted run", () => {
    fc.assert(
      fc.property(events, jittersArb(BOUND), fc.nat(), (evs, jitters, at) => {
        const arrivals = arrivalOrder(evs, jitters, BOUND);
        expect(runWithRestore(enrichBroadcastSpec, params, arrivals, BOUND, at % (arrivals.length + 1), unkeyed)).toEqual(run(enrichBroadcastSpec, params, arrivals, BOUND, unkeyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a record's enrichment depends only on the reference records of its own key", () => {
    fc.assert(
      fc.property(events, jittersArb(BOUND), (evs, jitters) => {
        const arrivals = arrivalOrder(evs, jitters, BOUND);
        const isM1 = (e: TestEvent) => (e.port === "reference" ? e.value.id : e.value.merchantId) === "m1";
        const all = run(enrichBroadcastSpec, params, arrivals, BOUND, unkeyed).filter((o) => o.value.merchantId === "m1");
        const alone = run(enrichBroadcastSpec, params, arrivals.filter(isM1), BOUND, unkeyed);
        expect(all).toEqual(alone);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("enrich.broadcast boundaries", () => {
  it("adds the reference record and its version; an older update does not roll the table back", () => {
    const h = OperatorTestHarness.forSpec(enrichBroadcastSpec, { ...params, targetField: "merchant" }, unkeyed);
    h.processElement({ id: "m1", mcc: "5411" }, 200, undefined, "reference")
      .processElement({ id: "m1", mcc: "0000" }, 100, undefined, "reference")
      .processElement({ txId: "t1", merchantId: "m1", amount: 5 }, 300);
    expect(h.outputOf("out").map((o) => o.value)).toEqual([{ txId: "t1", merchantId: "m1", amount: 5, merchant: { id: "m1", mcc: "5411" }, merchantVersion: 200 }]);
  });

  it("passes misses with nulls when asked, and sends records without a key to `errors`", () => {
    const h = OperatorTestHarness.forSpec(enrichBroadcastSpec, { ...params, onMiss: "pass-with-nulls" }, unkeyed);
    h.processElement({ txId: "t1", merchantId: "zz" }, 1).processElement({ txId: "t2" }, 2).processElement({ mcc: 1 }, 3, undefined, "reference");
    expect(h.output().map((o) => [o.port, o.value.reference ?? null, o.value.referenceVersion ?? null])).toEqual([
      ["out", null, null],
      ["errors", null, null],
      ["errors", null, null],
    ]);
    expect(String(h.outputOf("errors")[0]?.value.error)).toMatch(/main field "merchantId" is missing/);
  });

  it("declares its second input and output fields", () => {
    expect(enrichBroadcastSpec.inputs.map((i) => i.id)).toEqual(["in", "reference"]);
    expect(enrichBroadcastSpec.outputFields?.(enrichBroadcastSpec.params.parse(params), ["txId", "merchantId"])).toEqual(["txId", "merchantId", "reference", "referenceVersion"]);
  });
});
