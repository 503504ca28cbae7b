// Timer queues (Flink's InternalTimerService): per key and namespace, deduplicated, deletable,
// fired in time order. Ties at one time fire in (key, namespace) order, so that the output of a
// watermark does not depend on the order in which keys registered their timers (a replay with a
// different arrival order within the out-of-orderness bound emits the same sequence).
import type { Key } from "./api";
import { NumberMinHeap } from "./minheap";

/** A timer in a snapshot: [time, namespace, key]. */
export type TimerTuple = [number, string, Key];

/** A timer being fired: the engine sets the key in scope and calls onTimer. */
export interface DueTimer {
  key: Key;
  namespace: string;
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One time domain's timers. Timers with the same time share a bucket (namespace -> keys), so a
 * registration is a dedup check of three hash lookups and no allocation once the bucket exists;
 * the distinct times sit in a min-heap.
 */
export class TimerQueue {
  private readonly byTime = new Map<number, Map<string, Set<Key>>>();
  private readonly times = new NumberMinHeap();
  private count = 0;

  /** Number of registered timers. */
  get size(): number {
    return this.count;
  }

  /** Registers a timer; registering the same (key, time, namespace) again is a no-op. Returns whether it was new. */
  register(key: Key, time: number, namespace: string): boolean {
    let bucket = this.byTime.get(time);
    if (bucket === undefined) {
      bucket = new Map();
      this.byTime.set(time, bucket);
      this.times.push(time);
    }
    let keys = bucket.get(namespace);
    if (keys === undefined) {
      keys = new Set();
      bucket.set(namespace, keys);
    } else if (keys.has(key)) return false;
    keys.add(key);
    this.count++;
    return true;
  }

  delete(key: Key, time: number, namespace: string): boolean {
    const bucket = this.byTime.get(time);
    const keys = bucket?.get(namespace);
    if (bucket === undefined || keys === undefined || !keys.delete(key)) return false;
    this.count--;
    if (keys.size === 0) {
      bucket.delete(namespace);
      // The time stays in the heap and is skipped when reached; rebuild if such stale times pile up.
      if (bucket.size === 0) {
        this.byTime.delete(time);
        if (this.times.size > 64 && this.times.size > 2 * this.byTime.size) this.rebuildTimes();
      }
    }
    return true;
  }

  has(key: Key, time: number, namespace: string): boolean {
    return this.byTime.get(time)?.get(namespace)?.has(key) ?? false;
  }

  /** The earliest time with a timer, or undefined. */
  peekTime(): number | undefined {
    for (let t = this.times.peek(); t !== undefined; t = this.times.peek()) {
      if (this.byTime.has(t)) return t;
      this.times.pop(); // stale: every timer at t was deleted, or t was pushed twice
    }
    return undefined;
  }

  /**
   * The timers at `time`, sorted by (key, namespace). They stay registered: the caller removes
   * each with `delete` just before firing it, and skips those deleted meanwhile (an onTimer may
   * delete another key's timer at the same time).
   */
  dueAt(time: number): DueTimer[] {
    const bucket = this.byTime.get(time);
    if (bucket === undefined) return [];
    const out: DueTimer[] = [];
    if (bucket.size === 1) {
      for (const [namespace, keys] of bucket) {
        const sorted = Array.from(keys).sort();
        for (const key of sorted) out.push({ key, namespace });
      }
      return out;
    }
    for (const [namespace, keys] of bucket) for (const key of keys) out.push({ key, namespace });
    return out.sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.namespace, b.namespace));
  }

  /** Every timer, sorted by (time, key, namespace): the deterministic snapshot form. */
  snapshot(): TimerTuple[] {
    const out: TimerTuple[] = [];
    const times = Array.from(this.byTime.keys()).sort((a, b) => a - b);
    for (const t of times) for (const d of this.dueAt(t)) out.push([t, d.namespace, d.key]);
    return out;
  }

  restore(timers: readonly TimerTuple[], keep?: (key: Key) => boolean): void {
    this.clear();
    for (const [time, namespace, key] of timers) if (!keep || keep(key)) this.register(key, time, namespace);
  }

  /** The keys holding timers, for state stats (a key with only a timer still counts as a key). */
  keys(): Set<Key> {
    const out = new Set<Key>();
    for (const bucket of this.byTime.values()) for (const keys of bucket.values()) for (const k of keys) out.add(k);
    return out;
  }

  clear(): void {
    this.byTime.clear();
    this.times.clear();
    this.count = 0;
  }

  private rebuildTimes(): void {
    this.times.clear();
    for (const t of this.byTime.keys()) this.times.push(t);
  }
}
