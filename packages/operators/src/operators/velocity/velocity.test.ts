import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { OperatorTestHarness, type HarnessOutput } from "../../testing/harness";
import { packedChunks } from "../../testing/canonical-snapshot";
import { canonicalJson } from "../shared/fields";
import { NUM_RUNS, arrivalOrder, byKey, eventsArb, feed, feedBatches, jittersArb, ofKey, ofPort, run, runWithRestore, type TestEvent } from "../shared/test-support";
import { SerializingStateBackend } from "../../core/state/serializing.testkit";
import { velocitySpec } from "./velocity";


const BOUND = 10;
const keyed = { keyed: true };

/** Reference model: count recomputed from the full event list, (t − w, t] per key. */
function model(events: readonly TestEvent[], threshold: number, windowMs: number): Map<string, string[]> {
  const alerts = new Map<string, Array<{ ts: number; line: string }>>();
  for (const e of events) {
    const count = events.filter((x) => x.key === e.key && x.ts > e.ts - windowMs && x.ts <= e.ts).length;
    if (count < threshold) continue;
    const list = alerts.get(e.key) ?? [];
    list.push({ ts: e.ts, line: `${e.ts}|${count}|${canonicalJson(e.value)}` });
    alerts.set(e.key, list);
  }
  const out = new Map<string, string[]>();
  for (const [k, list] of [...alerts.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    out.set(k, list.sort((a, b) => a.ts - b.ts || (a.line < b.line ? -1 : a.line > b.line ? 1 : 0)).map((x) => x.line));
  }
  return out;
}

function lines(out: readonly HarnessOutput[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const [k, list] of byKey(out.filter((o) => o.port === "out"))) {
    m.set(
      k,
      list.map((o) => `${String(o.value.ts)}|${String(o.value.count)}|${canonicalJson(o.value.event ?? null)}`),
    );
  }
  return m;
}

/** Eager model: a record counts the records of its key that arrived before it (itself included) in its window. */
function eagerModel(arrivals: readonly TestEvent[], threshold: number, windowMs: number): string[] {
  const out: string[] = [];
  arrivals.forEach((e, i) => {
    const count = arrivals.slice(0, i + 1).filter((x) => x.key === e.key && x.ts > e.ts - windowMs && x.ts <= e.ts).length;
    if (count >= threshold) out.push(`${e.key}|${e.ts}|${count}|${canonicalJson(e.value)}`);
  });
  return out;
}

/** The alerts in the form of eagerModel's lines, in emission order. */
const eagerLines = (out: readonly HarnessOutput[]): string[] =>
  ofPort(out, "out").map((o) => `${o.key}|${String(o.value.ts)}|${String(o.value.count)}|${canonicalJson(o.value.event ?? null)}`);

const paramsArb = fc.record({ threshold: fc.integer({ min: 1, max: 5 }), windowMs: fc.integer({ min: 1, max: 40 }) });
const valueArb = fc.record({ amount: fc.integer({ min: 1, max: 3 }) });

describe("velocity (ordered)", () => {
  it("counts equal a recount over the full event list, whatever the arrival order within the bound", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), (events, params, jitters) => {
        const out = run(velocitySpec, params, arrivalOrder(events, jitters, BOUND), BOUND, keyed);
        expect(ofPort(out, "late")).toEqual([]);
        expect(lines(out)).toEqual(model(events, params.threshold, params.windowMs));
        for (const o of ofPort(out, "out")) {
          const ev = o.value.evidence as { records: unknown[]; total: number };
          expect(ev.total).toBe(o.value.count);
          expect(o.timestamp).toBe(o.value.ts);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("gives the same output sequence for any two arrival orders within the bound", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), jittersArb(BOUND), (events, params, j1, j2) => {
        const a = run(velocitySpec, params, arrivalOrder(events, j1, BOUND), BOUND, keyed);
        const b = run(velocitySpec, params, arrivalOrder(events, j2, BOUND), BOUND, keyed);
        expect(b).toEqual(a);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("snapshot and restore at any record equals an uninterrupted run", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), fc.nat(), fc.constantFrom("ordered", "eager"), (events, params, jitters, at, mode) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const p = { ...params, mode };
        expect(runWithRestore(velocitySpec, p, arrivals, BOUND, at % (arrivals.length + 1), keyed)).toEqual(run(velocitySpec, p, arrivals, BOUND, keyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a key's output does not depend on the other keys", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), (events, params, jitters) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const all = run(velocitySpec, params, arrivals, BOUND, keyed);
        const alone = run(velocitySpec, params, arrivals.filter((e) => e.key === "a"), BOUND, keyed);
        expect(ofKey(all, "a")).toEqual(ofKey(alone, "a"));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("TTL bounds state: unique keys keep live keys <= the keys seen within 2 × windowMs", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 150 }), fc.integer({ min: 1, max: 30 }), (gaps, windowMs) => {
        const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 2, windowMs }, keyed);
        const seen: Array<{ key: string; ts: number }> = [];
        let ts = 0;
        const events = gaps.map((g, i) => {
          ts += g;
          return { key: `k${i}`, ts, value: { id: i } };
        });
        feed(h, events, {
          bound: BOUND,
          noEnd: true,
          after: (i) => {
            seen.push(events[i] as { key: string; ts: number });
            const horizon = h.watermark() - 2 * windowMs;
            const live = seen.filter((e) => e.ts > horizon).length;
            expect(h.stateStats().keys).toBeLessThanOrEqual(live);
          },
        });
        h.endOfInput();
        expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe("velocity (eager)", () => {
  it("decides on arrival, counting the records that arrived before", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), (events, params, jitters) => {
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const out = run(velocitySpec, { ...params, mode: "eager" }, arrivals, BOUND, keyed);
        expect(eagerLines(out)).toEqual(eagerModel(arrivals, params.threshold, params.windowMs));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("gives up order independence: the same burst out of order alerts on a different record", () => {
    const params = { threshold: 2, windowMs: 100, mode: "eager" as const };
    const inOrder = OperatorTestHarness.forSpec(velocitySpec, params, keyed);
    inOrder.processElement({ id: "1" }, 10, "card").processElement({ id: "2" }, 20, "card");
    const reversed = OperatorTestHarness.forSpec(velocitySpec, params, keyed);
    reversed.processElement({ id: "2" }, 20, "card").processElement({ id: "1" }, 10, "card");
    expect(inOrder.output().map((o) => o.value.ts)).toEqual([20]);
    expect(reversed.output()).toEqual([]); // the record at 10 does not see the one at 20, nor raise its count
  });
});

describe("velocity boundaries", () => {
  const alertsOf = (h: OperatorTestHarness): JsonObject[] => h.outputOf("out").map((o) => o.value);

  it("excludes a record exactly windowMs earlier and includes one a millisecond later", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 2, windowMs: 1000 }, keyed);
    h.processElement({ id: "a" }, 0, "k").processElement({ id: "b" }, 1000, "k").processElement({ id: "c" }, 1999, "k").endOfInput();
    expect(alertsOf(h).map((a) => [a.ts, a.count])).toEqual([[1999, 2]]);
  });

  it("counts records with equal timestamps together, each alerting with the same count", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 2, windowMs: 10 }, keyed);
    h.processElement({ id: "y" }, 5, "k").processElement({ id: "x" }, 5, "k").endOfInput();
    expect(alertsOf(h).map((a) => [a.count, (a.event as JsonObject).id])).toEqual([
      [2, "x"],
      [2, "y"],
    ]);
  });

  it("emits { key, ts, count, event, evidence } with ids and timestamps, capped at 50 with the total", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 60, windowMs: 1_000 }, keyed);
    for (let i = 0; i < 60; i++) h.processElement({ id: `t${i}`, amount: i }, 100 + i, "card-1");
    h.endOfInput();
    const [alert] = h.output();
    expect(alert?.port).toBe("out");
    expect(alert?.key).toBe("card-1");
    expect(alert?.value).toMatchObject({ key: "card-1", ts: 159, count: 60, event: { id: "t59", amount: 59 } });
    const evidence = alert?.value.evidence as { records: Array<{ id: string; ts: number }>; total: number };
    expect(evidence.total).toBe(60);
    expect(evidence.records).toHaveLength(50);
    expect(evidence.records[0]).toEqual({ id: "t10", ts: 110 });
    expect(evidence.records[49]).toEqual({ id: "t59", ts: 159 });
  });

  it("sends records at or below the watermark to `late`, unchanged, in both modes", () => {
    for (const mode of ["ordered", "eager"] as const) {
      const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 1, windowMs: 10, mode }, keyed);
      h.processWatermark(100).processElement({ id: "late" }, 100, "k").processElement({ id: "ok" }, 101, "k").endOfInput();
      expect(h.outputOf("late").map((o) => o.value)).toEqual([{ id: "late" }]);
      expect(alertsOf(h).map((a) => a.ts)).toEqual([101]);
    }
  });

  it("holds ordered records until the watermark passes them", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 1, windowMs: 10 }, keyed);
    h.processElement({ id: "1" }, 50, "k");
    expect(h.output()).toEqual([]);
    h.processWatermark(49);
    expect(h.output()).toEqual([]);
    h.processWatermark(50);
    expect(alertsOf(h).map((a) => a.ts)).toEqual([50]);
  });

  it("frees a silent key with the cleanup timer at last record + windowMs", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 3, windowMs: 100 }, keyed);
    h.processElement({ id: "1" }, 10, "k").processWatermark(10);
    expect(h.stateStats().keys).toBe(1);
    h.processWatermark(109);
    expect(h.stateStats().keys).toBe(1);
    h.processWatermark(110);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });

  it("refuses a missing threshold and a non-positive window", () => {
    expect(velocitySpec.params.safeParse({ windowMs: 10 }).success).toBe(false);
    expect(velocitySpec.params.safeParse({ threshold: 2, windowMs: 0 }).success).toBe(false);
    expect(velocitySpec.params.parse({ threshold: 2, windowMs: "10m" })).toMatchObject({ windowMs: 600_000, mode: "ordered", idField: "id" });
  });
});

describe.each(["ordered", "eager"] as const)("velocity (%s): heap storage and handle storage", (mode) => {
  // The heap backend runs SlotOrderedVelocity or SlotEagerVelocity (key slots, rows, a cleanup
  // schedule); a serializing backend, like the runner's disk backend, runs the state handles with
  // their cleanup (and, ordered, release) timers.
  const serializing = { keyed: true, backend: () => new SerializingStateBackend() };
  /** The reference model's lines and the run's, in the mode's form (ordered: per key by time; eager: in arrival order). */
  const expected = (events: readonly TestEvent[], arrivals: readonly TestEvent[], p: { threshold: number; windowMs: number }): unknown =>
    mode === "ordered" ? model(events, p.threshold, p.windowMs) : eagerModel(arrivals, p.threshold, p.windowMs);
  const linesOf = (out: readonly HarnessOutput[]): unknown => (mode === "ordered" ? lines(out) : eagerLines(out));

  it("emit the same sequence, equal to the recount, whatever the arrival order", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), (events, p, jitters) => {
        const params = { ...p, mode };
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const onDisk = run(velocitySpec, params, arrivals, BOUND, serializing);
        expect(run(velocitySpec, params, arrivals, BOUND, keyed)).toEqual(onDisk);
        expect(linesOf(onDisk)).toEqual(expected(events, arrivals, params));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("handle storage: snapshot and restore at any record equals an uninterrupted run", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), fc.nat(), (events, p, jitters, at) => {
        const params = { ...p, mode };
        const arrivals = arrivalOrder(events, jitters, BOUND);
        expect(runWithRestore(velocitySpec, params, arrivals, BOUND, at % (arrivals.length + 1), serializing)).toEqual(run(velocitySpec, params, arrivals, BOUND, keyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a snapshot taken on either storage restores on the other at any record", () => {
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), fc.nat(), fc.boolean(), (events, p, jitters, at, heapFirst) => {
        const params = { ...p, mode };
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const [a, b] = heapFirst ? [keyed, serializing] : [serializing, keyed];
        expect(runWithRestore(velocitySpec, params, arrivals, BOUND, at % (arrivals.length + 1), a, b)).toEqual(run(velocitySpec, params, arrivals, BOUND, keyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  // Busy keys: more records in a window than a heap row holds (it spills to arrays), records with a
  // string, a numeric or no id (the row keeps ids only once one comes), mixed within a key; long ids
  // (a row's id area overflows after a few: the row's ids move to an array), non-ASCII ones (no
  // byte form: an array at once), and UUIDs (lower case: their 16 bytes; mixed case: as text). The
  // lengths are explicit: fast-check's default size would stop arrays at about ten records.
  const idOfKind = (kind: string, i: number): string | number =>
    kind === "number" ? i : kind === "long" ? `${"L".repeat(120)}${i}` : kind === "wide" ? `é${i}` : kind === "uuid" ? `${i % 2 === 0 ? "a" : "A"}bcdef01-2345-4678-9abc-${String(i).padStart(12, "0")}` : `e${i}`;
  const busyArb = fc
    .array(
      fc.record({
        key: fc.constantFrom("a", "b"),
        ts: fc.integer({ min: 0, max: 60 }),
        amount: fc.integer({ min: 1, max: 3 }),
        idKind: fc.constantFrom("string", "number", "none", "string", "number", "none", "long", "long", "wide", "uuid", "uuid"),
      }),
      { minLength: 20, maxLength: 90 },
    )
    .map((list) =>
      list
        .map(({ key, ts, amount, idKind }, i): TestEvent => ({ key, ts, value: idKind === "none" ? { amount } : { id: idOfKind(idKind, i), amount } }))
        .sort((a, b) => a.ts - b.ts),
    );
  const busyParamsArb = fc.record({ threshold: fc.integer({ min: 1, max: 30 }), windowMs: fc.integer({ min: 5, max: 200 }) });

  /** Heap and handle storage emit the same sequence, equal to the recount, and a restore at `at` (across storages, and on the heap) changes nothing. */
  const expectBothStoragesAndRestores = (params: { threshold: number; windowMs: number; mode: typeof mode }, events: readonly TestEvent[], arrivals: readonly TestEvent[], bound: number, at: number, heapFirst: boolean): void => {
    const onHeap = run(velocitySpec, params, arrivals, bound, keyed);
    expect(onHeap).toEqual(run(velocitySpec, params, arrivals, bound, serializing));
    expect(linesOf(onHeap)).toEqual(expected(events, arrivals, params));
    const [a, b] = heapFirst ? [keyed, serializing] : [serializing, keyed];
    expect(runWithRestore(velocitySpec, params, arrivals, bound, at % (arrivals.length + 1), a, b)).toEqual(onHeap);
    expect(runWithRestore(velocitySpec, params, arrivals, bound, at % (arrivals.length + 1), keyed)).toEqual(onHeap);
  };

  it("busy keys and records without ids: same sequence on both, equal to the recount, and restored across them", () => {
    fc.assert(
      fc.property(busyArb, busyParamsArb, jittersArb(BOUND), fc.nat(), fc.boolean(), (events, p, jitters, at, heapFirst) => {
        expectBothStoragesAndRestores({ ...p, mode }, events, arrivalOrder(events, jitters, BOUND), BOUND, at, heapFirst);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  // Past the first page of rows and the key table's first sizes: their arrays then live in shared
  // memory (state-memory.ts), and both must answer as the handle storage does, restored or not.
  it("over 20 000 keys (rows in shared memory): same sequence as the handle storage, and restored mid-stream", () => {
    const events: TestEvent[] = [];
    for (let i = 0; i < 60_000; i++) events.push({ key: `card-${(i * 7919) % 20_000}`, ts: i >> 2, value: { amount: (i % 3) + 1 } });
    const params = { threshold: 2, windowMs: 20_000, mode };
    const arrivals = arrivalOrder(events, events.map((_, i) => (i * 31) % BOUND), BOUND);
    const onHeap = run(velocitySpec, params, arrivals, BOUND, keyed);
    expect(ofPort(onHeap, "out").length).toBeGreaterThan(30_000);
    expect(onHeap).toEqual(run(velocitySpec, params, arrivals, BOUND, serializing));
    expect(runWithRestore(velocitySpec, params, arrivals, BOUND, 45_000, keyed)).toEqual(onHeap);
  });

  // Timestamps far apart and fractional: any compact form of a heap row (say int32 offsets from its
  // first timestamp) would have to give way for these. Timestamps and windows are scaled by 2^28 ms
  // (eight steps are past 2^31), some with a quarter millisecond.
  it("timestamps spanning more than 2^31 ms within a window, and fractional ones: same sequence on both, equal to the recount, and restored across them", () => {
    const SCALE = 2 ** 28;
    fc.assert(
      fc.property(busyArb, busyParamsArb, jittersArb(BOUND), fc.constantFrom(0, 0.25), fc.nat(), fc.boolean(), (busy, p, jitters, frac, at, heapFirst) => {
        const params = { threshold: Math.min(p.threshold, 6), windowMs: Math.ceil(p.windowMs / 20) * SCALE, mode };
        const arrivals = arrivalOrder(busy, jitters, BOUND).map((e, i) => ({ ...e, ts: e.ts * SCALE + (i % 3 === 0 ? frac : 0) }));
        expectBothStoragesAndRestores(params, [...arrivals].sort((a, b) => a.ts - b.ts), arrivals, BOUND * SCALE, at, heapFirst);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("processBatch (the records between two watermarks in one call) emits what processElement does, late records included, on both storages", () => {
    // The watermark trails the arrivals by BOUND, but records arrive up to 2 × BOUND late, so some are late.
    const batched = (params: { threshold: number; windowMs: number }, arrivals: readonly TestEvent[], opts: typeof keyed): HarnessOutput[] => {
      const h = OperatorTestHarness.forSpec(velocitySpec, { ...params, mode }, opts);
      feedBatches(h, arrivals, BOUND);
      return h.output();
    };
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(2 * BOUND), (events, params, jitters) => {
        const arrivals = arrivalOrder(events, jitters, 2 * BOUND);
        for (const opts of [keyed, serializing]) expect(batched(params, arrivals, opts)).toEqual(run(velocitySpec, { ...params, mode }, arrivals, BOUND, opts));
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("one heap host snapshotting and materializing as it goes (kept columns) stays exact, every snapshot checked against the state", () => {
    // The unit tests verify each heap snapshot's kept columns against columns packed afresh: a
    // change to a key's window that the table does not report fails it.
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 12 }), (events, p, jitters, checkpoints) => {
        const params = { ...p, mode };
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const at = new Map<number, boolean[]>();
        for (const [i, materialize] of checkpoints) if (arrivals.length > 0) at.set(i % arrivals.length, [...(at.get(i % arrivals.length) ?? []), materialize]);
        const h = OperatorTestHarness.forSpec(velocitySpec, params, keyed);
        // Each snapshot also restores into a fresh host that runs the rest: a stored form the state
        // reads wrong (ordered's index of waiting records, kept up to date between snapshots) fails here.
        const taken: Array<{ bytes: Uint8Array; cut: number; emitted: number }> = [];
        feed(h, arrivals, {
          bound: BOUND,
          after: (i) => {
            for (const materialize of at.get(i) ?? []) {
              if (materialize) h.host.materialize();
              else taken.push({ bytes: h.snapshot(), cut: i + 1, emitted: h.output().length });
            }
          },
          noEnd: true,
        });
        h.snapshot();
        h.endOfInput();
        h.snapshot();
        const whole = run(velocitySpec, params, arrivals, BOUND, keyed);
        expect(h.output()).toEqual(whole);
        for (const { bytes, cut, emitted } of taken) {
          const restored = OperatorTestHarness.restore(velocitySpec, params, bytes, keyed);
          feed(restored, arrivals, { bound: BOUND }, cut);
          expect([...whole.slice(0, emitted), ...restored.output()]).toEqual(whole);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("a heap snapshot restored on the handle storage gets its cleanup (and release) timers back, derived from the state", () => {
    // Heap snapshots leave these timers implied by the windows (velocitySpec.impliedTimers): without
    // them the restored windows would wait for their TTL (2 × windowMs) instead of their cleanup.
    fc.assert(
      fc.property(eventsArb(valueArb), paramsArb, jittersArb(BOUND), fc.nat(), (events, p, jitters, at) => {
        const params = { ...p, mode };
        const arrivals = arrivalOrder(events, jitters, BOUND);
        const cut = at % (arrivals.length + 1);
        const onHeap = OperatorTestHarness.forSpec(velocitySpec, params, keyed);
        feed(onHeap, arrivals.slice(0, cut), { bound: BOUND, noEnd: true });
        const restored = OperatorTestHarness.restore(velocitySpec, params, onHeap.snapshot(), serializing);
        // Every window's cleanup is due by then, and no TTL (2 × windowMs after a write) has run out.
        restored.processWatermark(Math.max(0, ...arrivals.slice(0, cut).map((e) => e.ts)) + params.windowMs);
        expect(restored.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("both count live keys and free them the same way", () => {
    const stats = (opts: typeof keyed) => {
      const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 2, windowMs: 100, mode }, opts);
      const seen: Array<{ keys: number; stateEntries: number }> = [];
      for (const [key, ts] of [["a", 10], ["b", 20], ["a", 60], ["c", 300]] as const) {
        h.processElement({ id: `${key}${ts}` }, ts, key).processWatermark(ts - 1);
        const s = h.stateStats();
        seen.push({ keys: s.keys, stateEntries: s.stateEntries });
      }
      h.processWatermark(400);
      const s = h.stateStats();
      seen.push({ keys: s.keys, stateEntries: s.stateEntries });
      return seen;
    };
    expect(stats(keyed)).toEqual(stats(serializing));
  });
});

describe("velocity (eager): heap checkpoints", () => {
  // eager's heap checkpoints write each window's stored form straight from its row (ValueWriter);
  // the bytes must be msgpackr's for the same object, whatever the ids: numbers of every form,
  // short ASCII strings (written), long or non-ASCII ones (packed as objects), none.
  const idArb = fc.oneof(
    fc.constant(undefined),
    fc.integer({ min: -0x80000000, max: 0xffffffff }),
    fc.double({ noNaN: true }),
    fc.string({ maxLength: 31 }),
    fc.string({ minLength: 32, maxLength: 40 }),
    fc.constantFrom("tx-é", "☃", "a\u0080"),
    fc.uuid(),
  );
  const packedArb = fc
    .array(fc.record({ key: fc.constantFrom("a", "b", "c"), ts: fc.integer({ min: 0, max: 60 }), id: idArb }), { minLength: 1, maxLength: 60 })
    .map((list) => list.map(({ key, ts, id }): TestEvent => ({ key, ts, value: id === undefined ? { amount: 1 } : { id, amount: 1 } })).sort((a, b) => a.ts - b.ts));

  it("heap snapshots hold each window packed exactly as msgpackr packs its stored form", () => {
    fc.assert(
      fc.property(packedArb, fc.constantFrom(0, 1_700_000_000_000, -5_000), fc.integer({ min: 5, max: 200 }), jittersArb(BOUND), (events, base, windowMs, jitters) => {
        const arrivals = arrivalOrder(
          events.map((e) => ({ ...e, ts: e.ts + base })),
          jitters,
          BOUND,
        );
        const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 3, windowMs, mode: "eager" as const }, keyed);
        feed(h, arrivals, {
          bound: BOUND,
          after: (i) => {
            if (i % 7 !== 6) return;
            expect(packedChunks(h.snapshot(), "velocity").filter((c) => !c.repackedAlike)).toEqual([]);
          },
          noEnd: true,
        });
        const last = packedChunks(h.snapshot(), "velocity");
        expect(last.filter((c) => !c.repackedAlike)).toEqual([]);
        // Windows are live at the last snapshot (no end of input): it has something to check.
        expect(last.length).toBeGreaterThan(0);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
