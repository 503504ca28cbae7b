import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { NUM_RUNS, arrivalOrder, jittersArb, ofPort, orderedOperatorProperties, run, type TestEvent } from "../shared/test-support";
import { enrichTemporalSpec } from "./enrich-temporal";

const BOUND = 10;

/** Payments keyed by account, looking up merchants; merchant versions valid from their timestamp. */
const events = fc
  .array(
    fc.oneof(
      fc.record({ kind: fc.constant("main" as const), key: fc.constantFrom("a", "b"), ts: fc.integer({ min: 0, max: 100 }), merchant: fc.constantFrom("m1", "m2", "m3") }),
      fc.record({ kind: fc.constant("ref" as const), key: fc.constant(""), ts: fc.integer({ min: 0, max: 100 }), merchant: fc.constantFrom("m1", "m2", "m3") }),
    ),
    { maxLength: 40 },
  )
  .map((list) =>
    list
      .map((e, i): TestEvent =>
        e.kind === "main"
          ? { key: e.key, ts: e.ts, value: { id: `p${i}`, merchantId: e.merchant } }
          : { key: "", ts: e.ts, port: "reference", value: { id: e.merchant, validFrom: e.ts, tier: i } },
      )
      .sort((a, b) => a.ts - b.ts),
  );

const paramsArb = fc.record({ ttl: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }), onMiss: fc.constantFrom("miss-port", "pass-with-nulls") }).map(({ ttl, onMiss }) => ({
  keyField: "merchantId",
  referenceKeyField: "id",
  referenceTimestampField: "validFrom",
  onMiss,
  ...(ttl === undefined ? {} : { ttlMs: ttl }),
}));

/**
 * Reference model: for a payment at t, the merchant version with the greatest validFrom <= t (a later
 * arrival wins a tie), unless its TTL ran out by t. All versions count, whenever they arrived.
 */
function model(arrivals: readonly TestEvent[], ttlMs: number | undefined): Array<{ id: string; version: number | null; tier: number | null }> {
  const refs = arrivals.filter((e) => e.port === "reference");
  return arrivals
    .filter((e) => e.port !== "reference")
    .map((p) => {
      let best: TestEvent | undefined;
      for (const r of refs) {
        if (r.value.id !== p.value.merchantId || r.ts > p.ts) continue;
        if (best === undefined || r.ts >= best.ts) best = r;
      }
      const valid = best !== undefined && (ttlMs === undefined || p.ts < best.ts + ttlMs);
      return { id: String(p.value.id), version: valid && best ? best.ts : null, tier: valid && best ? Number(best.value.tier) : null, ts: p.ts };
    })
    .sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1))
    .map(({ id, version, tier }) => ({ id, version, tier }));
}

describe("enrich.temporal", () => {
  it("joins each record with the version valid at its event time, whatever arrived since", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(BOUND), (evs, params, jitters) => {
        const arrivals = arrivalOrder(evs, jitters, BOUND);
        const out = run(enrichTemporalSpec, { ...params, onMiss: "pass-with-nulls" }, arrivals, BOUND);
        const got = ofPort(out, "out")
          .map((o) => ({ id: String(o.value.id), version: o.value.referenceVersion ?? null, tier: (o.value.reference as { tier?: number } | null)?.tier ?? null, ts: o.timestamp }))
          .sort((a, b) => a.ts - b.ts || (a.id < b.id ? -1 : 1))
          .map(({ id, version, tier }) => ({ id, version, tier }));
        expect(got).toEqual(model(arrivals, params.ttlMs));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  // Two versions of one reference key with the same valid-from time are a correction: the later
  // arrival replaces the earlier (see the model), so their arrival order is meaningful by design.
  // Order invariance is a property of streams without such ties.
  const eventsWithoutTiedVersions = events.map((list) => {
    const seen = new Set<string>();
    return list.filter((e) => {
      if (e.port !== "reference") return true;
      const version = `${String(e.value.id)}@${e.ts}`;
      if (seen.has(version)) return false;
      seen.add(version);
      return true;
    });
  });
  orderedOperatorProperties(enrichTemporalSpec, paramsArb, eventsWithoutTiedVersions, {
    bound: BOUND,
    it,
    expectEqual: (a, b) => expect(a).toEqual(b),
    keepForKeyA: (e) => e.key === "a" || e.port === "reference",
  });

  it("bounds the versioned state: superseded and expired versions are dropped as the watermark passes them", () => {
    const h = OperatorTestHarness.forSpec(enrichTemporalSpec, { keyField: "m", referenceKeyField: "id", referenceTimestampField: "validFrom", ttlMs: 5_000 }, { keyed: true });
    for (let i = 0; i < 100; i++) {
      h.processElement({ id: "m1", validFrom: i * 1_000 }, i * 1_000, undefined, "reference");
      h.processWatermark(i * 1_000);
    }
    const versions = (h.host.operator.snapshotState?.() as { versions: Array<[string, unknown[]]> }).versions;
    // Pruned on insert and swept every ttlMs of watermark: the version in force plus at most the next one.
    expect(versions).toHaveLength(1);
    expect(versions[0]?.[1].length).toBeLessThanOrEqual(2);
    h.processWatermark(99_000 + 5_000);
    expect((h.host.operator.snapshotState?.() as { versions: unknown[] }).versions).toEqual([]);
  });
});

describe("enrich.temporal boundaries", () => {
  const params = { keyField: "customerId", referenceKeyField: "customerId", referenceTimestampField: "validFrom", targetField: "risk" };

  it("uses the version in force at the payment's time, not the newest, and records its validity time", () => {
    const h = OperatorTestHarness.forSpec(enrichTemporalSpec, params, { keyed: true });
    h.processElement({ customerId: "c1", tier: "low", validFrom: "2026-01-01T00:00:00Z" }, 0, undefined, "reference")
      .processElement({ customerId: "c1", tier: "high", validFrom: "2026-02-01T00:00:00Z" }, 0, undefined, "reference")
      .processElement({ id: "p1", customerId: "c1" }, Date.parse("2026-01-15T00:00:00Z"), "c1")
      .processElement({ id: "p2", customerId: "c1" }, Date.parse("2026-02-01T00:00:00Z"), "c1")
      .endOfInput();
    expect(h.outputOf("out").map((o) => [o.value.id, (o.value.risk as { tier: string }).tier, o.value.riskVersion])).toEqual([
      ["p1", "low", Date.parse("2026-01-01T00:00:00Z")],
      ["p2", "high", Date.parse("2026-02-01T00:00:00Z")],
    ]);
  });

  it("waits for the watermark: a version arriving after the payment but valid before it is used", () => {
    const h = OperatorTestHarness.forSpec(enrichTemporalSpec, params, { keyed: true });
    h.processElement({ id: "p1", customerId: "c1" }, 100, "c1").processElement({ customerId: "c1", tier: "mid", validFrom: 50 }, 50, undefined, "reference").processWatermark(100);
    expect(h.outputOf("out").map((o) => o.value.riskVersion)).toEqual([50]);
  });

  it("sends misses to `miss` unchanged, late records to `late`, and references without a validity time to `errors`", () => {
    const h = OperatorTestHarness.forSpec(enrichTemporalSpec, params, { keyed: true });
    h.processElement({ customerId: "c9" }, 10, undefined, "reference")
      .processElement({ id: "p1", customerId: "c1" }, 100, "c1")
      .processWatermark(100)
      .processElement({ id: "p0", customerId: "c1" }, 90, "c1");
    expect(h.output().map((o) => [o.port, o.value.id ?? null])).toEqual([
      ["errors", null],
      ["miss", "p1"],
      ["late", "p0"],
    ]);
  });
});
