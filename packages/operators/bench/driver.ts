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
  state?: { keys: number; timers: number; estimatedBytes: number; heapBytes?: number };
}

export interface Workload {
  id: string;
  title: string;
  /** What the numbers mean (window, rate, disorder). */
  description: string;
  /** Builds inputs once; each run() processes them on a fresh operator. */
  prepare(): { events: number; run(measureState: boolean): RunResult };
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
  /** Pre-built record pool size (records are replayed with shifted timestamps beyond it). */
  pool?: number;
}

/**
 * How the driver hands records to the host: by default the records between two watermark advances
 * in one OperatorHost.processBatch call (what a source polling batches would do; operators
 * without processBatch still see them one by one), or with `batches` false one processElement per
 * record (`--per-record`). The sequence of records and watermarks is the same either way.
 */
export const feed = { batches: true };

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

/** A workload that drives one keyed operator (window, velocity, dedup...) through an OperatorHost. */
export function keyedHostWorkload(def: KeyedWorkloadDef): Workload {
  return {
    id: def.id,
    title: def.title,
    description: def.description,
    prepare() {
      const rnd = prng(42);
      const poolSize = Math.min(def.events, def.pool ?? 2_000_000);
      const keyNames = Array.from({ length: def.keys }, (_, i) => `card-${i}`);
      const records: StreamRecord[] = new Array(poolSize);
      const base = new Float64Array(poolSize);
      const msPerEvent = 1000 / def.eventsPerSecond;
      const shared: JsonObject = { amount: 1 };
      for (let i = 0; i < poolSize; i++) {
        const u = rnd();
        const k = def.keyOf ? def.keyOf(u) : Math.floor(u * def.keys);
        base[i] = Math.floor(i * msPerEvent + rnd() * def.jitterMs);
        records[i] = { value: def.value ? def.value(i, rnd) : shared, timestamp: 0, key: keyNames[k] as string };
      }
      const poolSpan = Math.ceil(poolSize * msPerEvent) + def.jitterMs + 1;
      const t0 = 1_700_000_000_000;
      const ooo = def.maxOutOfOrdernessMs;
      return {
        events: def.events,
        run(measureState: boolean): RunResult {
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
          let maxTs = Number.NEGATIVE_INFINITY;
          let wm = Number.NEGATIVE_INFINITY;
          const start = process.hrtime.bigint();
          let done = 0;
          const batches = feed.batches;
          for (let pass = 0; done < def.events; pass++) {
            const offset = t0 + pass * poolSpan;
            const n = Math.min(poolSize, def.events - done);
            let from = 0;
            for (let i = 0; i < n; i++) {
              const r = records[i] as StreamRecord;
              const ts = (base[i] as number) + offset;
              r.timestamp = ts;
              if (!batches) host.processElement(r);
              if (ts > maxTs) {
                maxTs = ts;
                const w = ts - ooo - 1;
                if (w > wm) {
                  wm = w;
                  if (batches) {
                    host.processBatch(records, from, i + 1);
                    from = i + 1;
                  }
                  host.processWatermark(w);
                }
              }
            }
            if (batches && from < n) host.processBatch(records, from, n);
            done += n;
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
          host.endOfInput();
          const seconds = Number(process.hrtime.bigint() - start - paused) / 1e9;
          return { events: def.events, seconds, outputs, ...(state ? { state } : {}) };
        },
      };
    },
  };
}
