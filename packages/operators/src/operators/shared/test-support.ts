// Test support for the pattern operators' property tests: a bounded-out-of-orderness source
// simulated in front of an OperatorTestHarness (watermark = max event time seen − bound − 1 after
// every record, as the engine's sources do), arrival orders that stay within the bound, and the
// snapshot → restore → continue run that must equal an uninterrupted one.
import fc from "fast-check";
import type { z } from "zod";
import type { JsonObject, StreamRecord } from "../../core/api";
import type { OperatorSpec } from "../../core/spec";
import { OperatorTestHarness, type HarnessOptions, type HarnessOutput } from "../../testing/harness";

/** One input record: its key (for keyed operators), event time and value. */
export interface TestEvent {
  key: string;
  ts: number;
  value: JsonObject;
  /** Input port; default `in`. */
  port?: string;
}

/**
 * An arrival order within `bound`: each event arrives at ts + jitter (jitter in [0, bound]), ties
 * in input order. No event is then late: every event that arrived before it has ts <= its ts + bound.
 */
export function arrivalOrder<E extends TestEvent>(events: readonly E[], jitters: readonly number[], bound: number): E[] {
  const at = events.map((e, i) => ({ e, i, arrival: e.ts + Math.min(bound, Math.max(0, jitters[i % Math.max(1, jitters.length)] ?? 0)) }));
  at.sort((a, b) => a.arrival - b.arrival || a.i - b.i);
  return at.map((x) => x.e);
}

/** Jitters for arrivalOrder. */
export const jittersArb = (bound: number, n = 64) => fc.array(fc.integer({ min: 0, max: bound }), { minLength: n, maxLength: n });

export interface FeedOptions {
  /** The source's maxOutOfOrdernessMs. */
  bound: number;
  /** Called after each record (and its watermark) with the index of the record just fed. */
  after?: (index: number) => void;
  /** Skip the final end-of-input watermark. */
  noEnd?: boolean;
}

/** Feeds events in order, advancing the watermark as a bounded-out-of-orderness source would. */
export function feed(h: OperatorTestHarness, events: readonly TestEvent[], opts: FeedOptions, from = 0): void {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as TestEvent;
    if (e.ts > max) max = e.ts;
    if (i < from) continue;
    h.processElement(e.value, e.ts, e.key, e.port ?? "in");
    const wm = max - opts.bound - 1;
    if (wm > h.watermark()) h.processWatermark(wm);
    opts.after?.(i);
  }
  if (!opts.noEnd) h.endOfInput();
}

/**
 * As feed, but the records between two watermark advances go to the host in one processBatch
 * call, as the runner delivers a source poll's records.
 */
export function feedBatches(h: OperatorTestHarness, events: readonly TestEvent[], bound: number): void {
  const records: StreamRecord[] = events.map((e) => ({ value: e.value, timestamp: e.ts, key: e.key }));
  let max = Number.NEGATIVE_INFINITY;
  let from = 0;
  records.forEach((r, i) => {
    if (r.timestamp > max) {
      max = r.timestamp;
      h.host.processBatch(records, from, i + 1);
      from = i + 1;
      h.processWatermark(max - bound - 1);
    }
  });
  h.host.processBatch(records, from, records.length);
  h.endOfInput();
}

/** The whole output of one uninterrupted run. */
export function run<P extends z.ZodType>(
  spec: OperatorSpec<P>,
  params: z.input<P>,
  events: readonly TestEvent[],
  bound: number,
  opts: HarnessOptions = { keyed: true },
): HarnessOutput[] {
  const h = OperatorTestHarness.forSpec(spec, params, opts);
  feed(h, events, { bound });
  return h.output();
}

/** Runs, snapshots after event `at`, restores into a new harness and continues: the concatenated output. */
export function runWithRestore<P extends z.ZodType>(
  spec: OperatorSpec<P>,
  params: z.input<P>,
  events: readonly TestEvent[],
  bound: number,
  at: number,
  opts: HarnessOptions = { keyed: true },
  /** Options of the restored harness, e.g. another backend (default: opts). */
  restoreOpts: HarnessOptions = opts,
): HarnessOutput[] {
  const first = OperatorTestHarness.forSpec(spec, params, opts);
  const cut = Math.min(Math.max(0, at), events.length);
  feed(first, events.slice(0, cut), { bound, noEnd: true });
  const bytes = first.snapshot();
  const second = OperatorTestHarness.restore(spec, params, bytes, restoreOpts);
  // The restored operator continues with the same source: its max event time includes the prefix.
  feed(second, events, { bound }, cut);
  return [...first.output(), ...second.output()];
}

/** Outputs of one key, in order. */
export const ofKey = (out: readonly HarnessOutput[], key: string): HarnessOutput[] => out.filter((o) => o.key === key);

/** Outputs of one port, in order. */
export const ofPort = (out: readonly HarnessOutput[], port: string): HarnessOutput[] => out.filter((o) => o.port === port);

/** Per-key output sequences, for comparisons that must not depend on how keys interleave. */
export function byKey(out: readonly HarnessOutput[]): Map<string, HarnessOutput[]> {
  const m = new Map<string, HarnessOutput[]>();
  for (const o of out) {
    const k = o.key ?? "";
    const list = m.get(k);
    if (list) list.push(o);
    else m.set(k, [o]);
  }
  return new Map([...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Property-test budget: enough runs to find boundary bugs, few enough to keep the suite fast. */
export const NUM_RUNS = 100;

/** Events of a few keys with small, colliding timestamps (boundaries and ties are where bugs live). */
export function eventsArb<V extends JsonObject>(
  valueArb: fc.Arbitrary<V>,
  opts: { keys?: readonly string[]; maxTs?: number; maxLength?: number } = {},
): fc.Arbitrary<TestEvent[]> {
  const keys = opts.keys ?? ["a", "b", "c"];
  return fc
    .array(fc.record({ key: fc.constantFrom(...keys), ts: fc.integer({ min: 0, max: opts.maxTs ?? 100 }), value: valueArb }), {
      maxLength: opts.maxLength ?? 40,
    })
    .map((list) =>
      list
        .map((e, i) => ({ key: e.key, ts: e.ts, value: { id: `e${i}`, ...e.value } }))
        .sort((a, b) => a.ts - b.ts),
    );
}

/**
 * The properties every ordered keyed operator must have, as one call per test file:
 * order invariance within the bound, snapshot/restore at any record, and key isolation.
 */
export function orderedOperatorProperties<P extends z.ZodType>(
  spec: OperatorSpec<P>,
  paramsArb: fc.Arbitrary<z.input<P>>,
  events: fc.Arbitrary<TestEvent[]>,
  opts: {
    bound?: number;
    it: (name: string, fn: () => void) => void;
    expectEqual: (a: unknown, b: unknown) => void;
    /** Events kept when running key "a" alone (default: its own); e.g. broadcast reference records too. */
    keepForKeyA?: (e: TestEvent) => boolean;
    /** Harness options besides keyed input, e.g. a serializing backend. */
    harness?: HarnessOptions;
  },
): void {
  const bound = opts.bound ?? 10;
  const keyed = { ...opts.harness, keyed: true };
  opts.it("gives the same output for any two arrival orders within the out-of-orderness bound", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(bound), jittersArb(bound), (evs, params, j1, j2) => {
        const a = run(spec, params, arrivalOrder(evs, j1, bound), bound, keyed);
        const b = run(spec, params, arrivalOrder(evs, j2, bound), bound, keyed);
        opts.expectEqual(b, a);
        opts.expectEqual(ofPort(a, "late"), []);
      }),
      { numRuns: NUM_RUNS },
    );
  });
  opts.it("snapshot and restore at any record equals an uninterrupted run", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(bound), fc.nat(), (evs, params, jitters, at) => {
        const arrivals = arrivalOrder(evs, jitters, bound);
        opts.expectEqual(runWithRestore(spec, params, arrivals, bound, at % (arrivals.length + 1), keyed), run(spec, params, arrivals, bound, keyed));
      }),
      { numRuns: NUM_RUNS },
    );
  });
  opts.it("a key's output does not depend on the other keys", () => {
    fc.assert(
      fc.property(events, paramsArb, jittersArb(bound), (evs, params, jitters) => {
        const arrivals = arrivalOrder(evs, jitters, bound);
        const all = run(spec, params, arrivals, bound, keyed);
        const alone = run(spec, params, arrivals.filter(opts.keepForKeyA ?? ((e) => e.key === "a")), bound, keyed);
        opts.expectEqual(ofKey(all, "a"), ofKey(alone, "a"));
      }),
      { numRuns: NUM_RUNS },
    );
  });
}

/**
 * TTL/cleanup bound: an unbounded stream of unique keys keeps live keys <= the keys whose last
 * record is within `horizonMs` of the watermark, and nothing once the input ends.
 */
export function checkStateBound<P extends z.ZodType>(
  spec: OperatorSpec<P>,
  params: z.input<P>,
  gaps: readonly number[],
  horizonMs: number,
  valueOf: (i: number) => JsonObject,
  expectAtMost: (actual: number, bound: number) => void,
  opts: { bound?: number; after?: (h: OperatorTestHarness) => void } = {},
): OperatorTestHarness {
  const h = OperatorTestHarness.forSpec(spec, params, { keyed: true });
  let ts = 0;
  const events = gaps.map((g, i): TestEvent => {
    ts += g;
    return { key: `k${i}`, ts, value: valueOf(i) };
  });
  feed(h, events, {
    bound: opts.bound ?? 10,
    noEnd: true,
    after: (i) => {
      const horizon = h.watermark() - horizonMs;
      expectAtMost(h.stateStats().keys, events.slice(0, i + 1).filter((e) => e.ts > horizon).length);
    },
  });
  h.endOfInput();
  return h;
}
