// The benchmark driver: feeds pre-built records into one OperatorHost on one thread, with the
// watermark a bounded-out-of-orderness source would give (advanced after every record), and
// measures events/s plus the state each key holds. Untimed: building records, GC, stats.
import type { JsonObject, StreamRecord } from "../src/core/api";
import { OperatorHost } from "../src/core/host";
import type { OperatorSpec } from "../src/core/spec";

export interface RunResult {
  events: number;
  seconds: number;
  outputs: number;
  /** Measured before end of input (live state), on the measuring run only. */
  state?: {
    keys: number;
    timers: number;
    estimatedBytes: number;
    heapBytes?: number;
  };
  /**
   * One full snapshot of the live state before end of input (a first checkpoint: every key
   * packed), on the warm-up run only: it starts the tables' change tracking, which would weigh on
   * the rest of a measured run. It catches a checkpoint growing faster than the state (ordered
   * velocity's was quadratic in its keys).
   */
  snapshot?: { ms: number; bytes: number };
}

export interface Workload {
  id: string;
  title: string;
  /** What the numbers mean (window, rate, disorder). */
  description: string;
  /** Builds inputs once; each run() processes them on a fresh operator. */
  prepare(): { events: number; run(measureState: boolean, takeSnapshot?: boolean): RunResult };
}

/** mulberry32: a seeded PRNG, so every bench run sees the same input. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface KeyedWorkloadDef {
  id: string;
  title: string;
  description: string;
  spec: OperatorSpec;
  params: unknown;
  events: number;
  keys: number;
  /** Event-time rate of the input: records per second of event time. */
  eventsPerSecond: number;
  /** Each record's timestamp is its slot plus uniform jitter in [0, jitterMs). */
  jitterMs: number;
  maxOutOfOrdernessMs: number;
  /** The record's value; by default `{ amount }`. */
  value?: (i: number, rnd: () => number) => JsonObject;
  /** Keys are drawn uniformly unless this maps a uniform draw to a key index. */
  keyOf?: (u: number) => number;
  /** Pre-built record pool size, 2M by default (records are replayed with shifted timestamps beyond it, their keys drawn again the same). */
  pool?: number;
}

/**
 * How the driver hands records to the host: by default the records between two watermark advances
 * in one OperatorHost.processBatch call (what a source polling batches would do; operators
 * without processBatch still see them one by one), or with `batches` false one processElement per
 * record (`--per-record`). The sequence of records and watermarks is the same either way.
 */
export const feed = {
  batches: true,
  /**
   * `--fresh`: records built a chunk at a time (FRESH_CHUNK) outside the clock and dropped once
   * fed, as a source hands them over, instead of a pool built once and replayed. The pool lives in
   * old space all run long, which every major collection marks, and the parts of records an
   * operator keeps (ids, values) were allocated before the heap baseline, so heap / key left them out.
   */
  fresh: false,
  /**
   * `--pool N`: caps every workload's pool at N records instead of its own size. A replayed pool
   * repeats its key draws pass after pass; this reproduces figures measured with another pool size.
   */
  pool: undefined as number | undefined,
};

const FRESH_CHUNK = 65_536;

declare const gc: (() => void) | undefined;
/** Heap plus ArrayBuffer memory: typed-array columns (key slots, rows) live outside the V8 heap. */
const usedBytes = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
const collect = (): void => {
  if (typeof gc === "function") {
    gc();
    gc();
  }
};

/**
 * What a bounded-out-of-orderness source does with records: the watermark max − ooo − 1 after
 * each record that raises the maximum, and the records between two watermark advances handed over
 * in one processBatch (or one by one: feed.batches false).
 */
class BoundedOutOfOrderness {
  private maxTs = Number.NEGATIVE_INFINITY;
  private wm = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly host: OperatorHost,
    private readonly ooo: number,
  ) {}

  /** Feeds records[0, n), each first given the timestamp base[i] + offset when there is a base (a replayed pool). */
  feed(records: StreamRecord[], n: number, base?: Float64Array, offset = 0): void {
    const host = this.host;
    const batches = feed.batches;
    let from = 0;
    for (let i = 0; i < n; i++) {
      const r = records[i] as StreamRecord;
      if (base !== undefined) r.timestamp = (base[i] as number) + offset;
      const ts = r.timestamp;
      if (!batches) host.processElement(r);
      if (ts > this.maxTs) {
        this.maxTs = ts;
        const w = ts - this.ooo - 1;
        if (w > this.wm) {
          this.wm = w;
          if (batches) {
            host.processBatch(records, from, i + 1);
            from = i + 1;
          }
          host.processWatermark(w);
        }
      }
    }
    if (batches && from < n) host.processBatch(records, from, n);
  }
}

/** A workload that drives one keyed operator (window, velocity, dedup...) through an OperatorHost. */
export function keyedHostWorkload(def: KeyedWorkloadDef): Workload {
  return {
    id: def.id,
    title: def.title,
    description: def.description,
    prepare() {
      const keyNames = Array.from({ length: def.keys }, (_, i) => `card-${i}`);
      const msPerEvent = 1000 / def.eventsPerSecond;
      const shared: JsonObject = { amount: 1 };
      const t0 = 1_700_000_000_000;
      /** Record g of the input from the run's generator (its key draw, jitter and value, in that order), at `offset`. */
      const build = (rnd: () => number, g: number, offset: number): StreamRecord => {
        const u = rnd();
        const k = def.keyOf ? def.keyOf(u) : Math.floor(u * def.keys);
        const timestamp = offset + Math.floor(g * msPerEvent + rnd() * def.jitterMs);
        return { value: def.value ? def.value(g, rnd) : shared, timestamp, key: keyNames[k] as string };
      };
      // The pool (the default feed): built once, replayed with shifted timestamps beyond its end.
      const poolSize = feed.fresh ? 0 : Math.min(def.events, feed.pool ?? def.pool ?? 2_000_000);
      const poolRnd = prng(42);
      const records: StreamRecord[] = Array.from({ length: poolSize }, (_, i) => build(poolRnd, i, 0));
      const base = Float64Array.from(records, (r) => r.timestamp);
      const poolSpan = Math.ceil(poolSize * msPerEvent) + def.jitterMs + 1;
      return {
        events: def.events,
        run(measureState: boolean, takeSnapshot = false): RunResult {
          let outputs = 0;
          const host = new OperatorHost({
            nodeId: def.id,
            spec: def.spec,
            params: def.spec.params.parse(def.params),
            emit: () => {
              outputs++;
            },
          });
          let heapBefore = 0;
          if (measureState) {
            collect();
            heapBefore = usedBytes();
          }
          const source = new BoundedOutOfOrderness(host, def.maxOutOfOrdernessMs);
          const start = process.hrtime.bigint();
          let building = 0n;
          if (feed.fresh) {
            const rnd = prng(42);
            for (let done = 0; done < def.events; ) {
              const b0 = process.hrtime.bigint();
              const n = Math.min(FRESH_CHUNK, def.events - done);
              const chunk = Array.from({ length: n }, (_, i) => build(rnd, done + i, t0));
              building += process.hrtime.bigint() - b0;
              source.feed(chunk, n);
              done += n;
            }
          } else {
            for (let pass = 0, done = 0; done < def.events; pass++) {
              const offset = t0 + pass * poolSpan;
              const n = Math.min(poolSize, def.events - done);
              source.feed(records, n, base, offset);
              done += n;
            }
          }
          let state: RunResult["state"];
          let paused = 0n;
          if (measureState) {
            const p0 = process.hrtime.bigint();
            const s = host.stateStats();
            collect();
            const heapBytes = typeof gc === "function" ? usedBytes() - heapBefore : undefined;
            state = { keys: s.keys, timers: s.timers, estimatedBytes: s.stateBytes, ...(heapBytes !== undefined ? { heapBytes } : {}) };
            paused = process.hrtime.bigint() - p0;
          }
          let snapshot: RunResult["snapshot"];
          if (takeSnapshot) {
            const s0 = process.hrtime.bigint();
            const bytes = host.snapshot().byteLength;
            const t = process.hrtime.bigint() - s0;
            snapshot = { ms: Number(t) / 1e6, bytes };
            paused += t;
          }
          host.endOfInput();
          const seconds = Number(process.hrtime.bigint() - start - paused - building) / 1e9;
          return { events: def.events, seconds, outputs, ...(state ? { state } : {}), ...(snapshot ? { snapshot } : {}) };
        },
      };
    },
  };
}
