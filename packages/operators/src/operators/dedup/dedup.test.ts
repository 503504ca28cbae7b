import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OperatorTestHarness, type HarnessOptions, type HarnessOutput } from "../../testing/harness";
import { NUM_RUNS, arrivalOrder, feed, feedBatches, jittersArb, ofKey, run, runWithRestore, type TestEvent } from "../shared/test-support";
import { SerializingStateBackend } from "../../core/state/serializing.testkit";
import { dedupSpec } from "./dedup";

const BOUND = 10;
const unkeyed = { keyed: false };

const eventsArb = fc
  .array(fc.record({ ts: fc.integer({ min: 0, max: 120 }), eventId: fc.constantFrom("a", "b", "c", 1, "1") }), { maxLength: 40 })
  .map((list) => list.map((e, i): TestEvent => ({ key: "", ts: e.ts, value: { eventId: e.eventId, seq: i } })).sort((a, b) => a.ts - b.ts));

/**
 * Brute force over the arrivals: a record is a duplicate when some record with the same id passed
 * at a time later than t − ttl and was not yet forgotten (its timer at passedAt + ttl not yet
 * passed by the watermark at the record's arrival).
 */
function model(arrivals: readonly TestEvent[], ttlMs: number): { passed: number[]; duplicates: number[] } {
  const passedAt: Array<{ id: string; ts: number }> = [];
  const passed: number[] = [];
  const duplicates: number[] = [];
  let max = Number.NEGATIVE_INFINITY;
  let wm = Number.NEGATIVE_INFINITY;
  for (const e of arrivals) {
    const id = String(e.value.eventId);
    const dup = passedAt.some((p) => p.id === id && p.ts > e.ts - ttlMs && p.ts + ttlMs > wm);
    if (dup) duplicates.push(Number(e.value.seq));
    else {
      passed.push(Number(e.value.seq));
      passedAt.push({ id, ts: e.ts });
    }
    max = Math.max(max, e.ts);
    wm = Math.max(wm, max - BOUND - 1);
  }
  return { passed, duplicates };
}

const ttlArb = fc.integer({ min: 1, max: 60 });

describe("dedup", () => {
  it("passes exactly the records a brute-force scan passes, unchanged", () => {
    fc.assert(
      fc.property(eventsArb, ttlArb, jittersArb(BOUND), (events, ttlMs, jitters) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const out = run(dedupSpec, { field: "eventId", ttlMs }, arrivals, BOUND, unkeyed);
        const expected = model(arrivals, ttlMs);
        const passed = out.filter((o) => o.port === "out");
        expect(passed.map((o) => o.value.seq)).toEqual(expected.passed);
        expect(out.filter((o) => o.port === "duplicates").map((o) => (o.value.record as { seq: number }).seq)).toEqual(expected.duplicates);
        for (const o of passed) {
          expect(Object.keys(o.value).sort()).toEqual(["eventId", "seq"]);
          expect(o.key).toBe(String(o.value.eventId));
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("snapshot and restore at any record equals an uninterrupted run", () => {
    fc.assert(
      fc.property(eventsArb, ttlArb, jittersArb(BOUND), fc.nat(), (events, ttlMs, jitters, at) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        expect(runWithRestore(dedupSpec, params, arrivals, BOUND, at % (arrivals.length + 1), unkeyed)).toEqual(run(dedupSpec, params, arrivals, BOUND, unkeyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("an id's decisions do not depend on the other ids", () => {
    fc.assert(
      fc.property(eventsArb, ttlArb, jittersArb(BOUND), (events, ttlMs, jitters) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        const all = run(dedupSpec, params, arrivals, BOUND, unkeyed);
        const alone = run(dedupSpec, params, arrivals.filter((e) => e.value.eventId === "a"), BOUND, unkeyed);
        const passedA = (out: typeof all) => ofKey(out, "a").filter((o) => o.port === "out").map((o) => o.value.seq);
        // Alone, the watermark lags; but an id is forgotten only when no on-time copy could still be held back.
        expect(passedA(all)).toEqual(passedA(alone));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("TTL bounds state: unique ids keep live keys <= the ids seen within ttlMs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 200 }), ttlArb, (gaps, ttlMs) => {
        const h = OperatorTestHarness.forSpec(dedupSpec, { field: "eventId", ttlMs }, unkeyed);
        let ts = 0;
        const events = gaps.map((g, i): TestEvent => {
          ts += g;
          return { key: "", ts, value: { eventId: `u${i}` } };
        });
        feed(h, events, {
          bound: BOUND,
          noEnd: true,
          after: (i) => {
            const horizon = h.watermark() - ttlMs;
            const live = events.slice(0, i + 1).filter((e) => e.ts > horizon).length;
            expect(h.stateStats().keys).toBeLessThanOrEqual(live);
          },
        });
        h.endOfInput();
        expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("dedup boundaries", () => {
  it("holds back copies within ttlMs (also earlier-stamped ones) and passes one exactly ttlMs later", () => {
    const h = OperatorTestHarness.forSpec(dedupSpec, { field: "id", ttlMs: 100 }, unkeyed);
    h.processElement({ id: "x", n: 1 }, 1000)
      .processElement({ id: "x", n: 2 }, 1099)
      .processElement({ id: "x", n: 3 }, 950)
      .processElement({ id: "x", n: 4 }, 1100);
    expect(h.outputOf("out").map((o) => o.value.n)).toEqual([1, 4]);
    expect(h.outputOf("duplicates").map((o) => o.value)).toEqual([
      { key: "x", ts: 1099, passedAt: 1000, duplicates: 1, record: { id: "x", n: 2 } },
      { key: "x", ts: 950, passedAt: 1000, duplicates: 2, record: { id: "x", n: 3 } },
    ]);
  });

  it("keys by the field itself: 42 and \"42\" are the same id, nested paths work", () => {
    const h = OperatorTestHarness.forSpec(dedupSpec, { field: "meta.id", ttlMs: 100 }, unkeyed);
    h.processElement({ meta: { id: 42 } }, 1).processElement({ meta: { id: "42" } }, 2);
    expect(h.outputOf("out")).toHaveLength(1);
    expect(h.outputOf("out")[0]?.key).toBe("42");
    expect(h.outputOf("duplicates")).toHaveLength(1);
  });

  it("sends a record without the field to `errors` with the reason", () => {
    const h = OperatorTestHarness.forSpec(dedupSpec, { field: "eventId", ttlMs: 100 }, unkeyed);
    h.processElement({ other: 1 }, 1);
    const [err] = h.outputOf("errors");
    expect(err?.value.error).toMatch(/field "eventId" is missing/);
    expect(err?.value.record).toEqual({ other: 1 });
  });

  it("forgets an id once the watermark passes passedAt + ttlMs", () => {
    const h = OperatorTestHarness.forSpec(dedupSpec, { field: "id", ttlMs: 100 }, unkeyed);
    h.processElement({ id: "x" }, 1000).processWatermark(1099);
    expect(h.stateStats().keys).toBe(1);
    h.processWatermark(1100);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });

  it("needs no keyBy and declares its ports", () => {
    expect(dedupSpec.requiresKeyedInput).toBe(false);
    expect(dedupSpec.outputs.map((o) => o.id)).toEqual(["out", "duplicates", "errors"]);
  });
});

describe("dedup: heap storage and handle storage", () => {
  // The heap backend runs SlotDedupStore (id slots, expiry buckets); a serializing backend, like
  // the runner's disk backend, runs two value states and an expiry timer per id.
  const serializing = { keyed: false, backend: () => new SerializingStateBackend() };
  const lateArb = fc
    .array(fc.record({ ts: fc.integer({ min: 0, max: 200 }), eventId: fc.constantFrom("a", "b", 1) }), { maxLength: 40 })
    .map((list) => list.map((e, i): TestEvent => ({ key: "", ts: e.ts, value: { eventId: e.eventId, seq: i } })));

  it("decide alike, also for arrivals far out of order (records later than the TTL)", () => {
    fc.assert(
      fc.property(fc.oneof(eventsArb, lateArb), ttlArb, jittersArb(BOUND), (events, ttlMs, jitters) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        expect(run(dedupSpec, params, arrivals, BOUND, unkeyed)).toEqual(run(dedupSpec, params, arrivals, BOUND, serializing));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("handle storage: snapshot and restore at any record equals an uninterrupted run", () => {
    fc.assert(
      fc.property(eventsArb, ttlArb, jittersArb(BOUND), fc.nat(), (events, ttlMs, jitters, at) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        expect(runWithRestore(dedupSpec, params, arrivals, BOUND, at % (arrivals.length + 1), serializing)).toEqual(run(dedupSpec, params, arrivals, BOUND, unkeyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a heap snapshot restored on the handle storage gets each remembered id's expiry timer back, derived from its state", () => {
    // Heap snapshots leave the expiry timers implied by passedAt (dedupSpec.impliedTimers): without
    // them the handle storage would remember the ids for ever.
    fc.assert(
      fc.property(eventsArb, ttlArb, jittersArb(BOUND), fc.nat(), (events, ttlMs, jitters, at) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        const cut = at % (arrivals.length + 1);
        const onHeap = OperatorTestHarness.forSpec(dedupSpec, params, unkeyed);
        const onHandles = OperatorTestHarness.forSpec(dedupSpec, params, serializing);
        for (const h of [onHeap, onHandles]) feed(h, arrivals.slice(0, cut), { bound: BOUND, noEnd: true });
        const restored = OperatorTestHarness.restore(dedupSpec, params, onHeap.snapshot(), serializing);
        expect(restored.stateStats()).toMatchObject({ keys: onHandles.stateStats().keys, timers: onHandles.stateStats().keys });
        restored.processWatermark(Math.max(0, ...arrivals.map((e) => e.ts)) + ttlMs + 1);
        expect(restored.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a snapshot taken on either storage restores on the other at any record", () => {
    fc.assert(
      fc.property(fc.oneof(eventsArb, lateArb), ttlArb, jittersArb(BOUND), fc.nat(), fc.boolean(), (events, ttlMs, jitters, at, heapFirst) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const params = { field: "eventId", ttlMs };
        const [a, b] = heapFirst ? [unkeyed, serializing] : [serializing, unkeyed];
        expect(runWithRestore(dedupSpec, params, arrivals, BOUND, at % (arrivals.length + 1), a, b)).toEqual(run(dedupSpec, params, arrivals, BOUND, unkeyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("processBatch (the records between two watermarks in one call) emits what processElement does, with errors and another subtask's ids among them, on both storages", () => {
    // Records without the id (errors) end a run; with a key group range, ids of other subtasks are skipped.
    const withErrorsArb = fc
      .array(fc.record({ ts: fc.integer({ min: 0, max: 200 }), eventId: fc.option(fc.constantFrom("a", "b", "c", "d", 1), { nil: undefined }) }), { maxLength: 60 })
      .map((list) => list.map((e, i): TestEvent => ({ key: "", ts: e.ts, value: e.eventId === undefined ? { seq: i } : { eventId: e.eventId, seq: i } })));
    const batched = (params: { field: string; ttlMs: number }, arrivals: readonly TestEvent[], opts: HarnessOptions): { out: HarnessOutput[]; recordsIn: number } => {
      const h = OperatorTestHarness.forSpec(dedupSpec, params, opts);
      feedBatches(h, arrivals, BOUND);
      return { out: h.output(), recordsIn: h.host.metrics().recordsIn };
    };
    const oneByOne = (params: { field: string; ttlMs: number }, arrivals: readonly TestEvent[], opts: HarnessOptions): { out: HarnessOutput[]; recordsIn: number } => {
      const h = OperatorTestHarness.forSpec(dedupSpec, params, opts);
      feed(h, arrivals, { bound: BOUND });
      return { out: h.output(), recordsIn: h.host.metrics().recordsIn };
    };
    fc.assert(
      fc.property(fc.oneof(withErrorsArb, lateArb), ttlArb, fc.boolean(), (arrivals, ttlMs, split) => {
        const params = { field: "eventId", ttlMs };
        const range = split ? { keyGroupRange: { start: 0, end: 63 } } : {};
        for (const opts of [unkeyed, serializing]) {
          const b = batched(params, arrivals, { ...opts, ...range });
          expect(b).toEqual(oneByOne(params, arrivals, { ...opts, ...range }));
          expect(b.recordsIn).toBe(arrivals.length);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  for (const [name, opts] of [["heap", unkeyed], ["handles", serializing]] as const) {
    it(`${name}: an id that passes when the watermark is past its expiry is held until the next advance`, () => {
      const h = OperatorTestHarness.forSpec(dedupSpec, { field: "id", ttlMs: 100 }, opts);
      h.processWatermark(1000).processElement({ id: "x", n: 1 }, 500).processElement({ id: "x", n: 2 }, 501);
      expect(h.outputOf("duplicates").map((o) => o.value.passedAt)).toEqual([500]);
      expect(h.stateStats().keys).toBe(1);
      h.processWatermark(1001).processElement({ id: "x", n: 3 }, 502);
      expect(h.outputOf("out").map((o) => o.value.n)).toEqual([1, 3]);
    });
  }
});
