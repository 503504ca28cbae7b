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

const DEFAULT_NS = "";
const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The timers of one time. Most times hold a single timer (a session's end, a per-key cleanup at
 * record time + TTL), so the first sits in two fields and only further ones pay for a Map of Sets.
 */
class Bucket {
  /** Timers besides the first: namespace -> keys. */
  rest: Map<string, Set<Key>> | undefined = undefined;
  count = 1;
  constructor(
    public firstKey: Key | undefined,
    public firstNs: string,
  ) {}

  has(key: Key, ns: string): boolean {
    return (this.firstKey === key && this.firstNs === ns) || (this.rest?.get(ns)?.has(key) ?? false);
  }

  add(key: Key, ns: string): boolean {
    if (this.firstKey === key && this.firstNs === ns) return false;
    if (this.firstKey === undefined && !(this.rest?.get(ns)?.has(key) ?? false)) {
      this.firstKey = key;
      this.firstNs = ns;
    } else {
      this.rest ??= new Map();
      let keys = this.rest.get(ns);
      if (keys === undefined) {
        keys = new Set();
        this.rest.set(ns, keys);
      }
      // One hash lookup, not has() then add(): with 100 k keys sharing a time each is a cache miss.
      const before = keys.size;
      keys.add(key);
      if (keys.size === before) return false;
    }
    this.count++;
    return true;
  }

  remove(key: Key, ns: string): boolean {
    if (this.firstKey === key && this.firstNs === ns) this.firstKey = undefined;
    else {
      const keys = this.rest?.get(ns);
      if (keys === undefined || !keys.delete(key)) return false;
      if (keys.size === 0) this.rest?.delete(ns);
    }
    this.count--;
    return true;
  }

  /** The timers sorted by (key, namespace). */
  sorted(): DueTimer[] {
    const out: DueTimer[] = [];
    if (this.firstKey !== undefined) out.push({ key: this.firstKey, namespace: this.firstNs });
    if (this.rest !== undefined) for (const [namespace, keys] of this.rest) for (const key of keys) out.push({ key, namespace });
    return out.length < 2 ? out : out.sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.namespace, b.namespace));
  }

  /** One namespace only: its keys sorted, without an object per timer. */
  sortedKeysOfSingleNamespace(): { keys: Key[]; namespace: string } | undefined {
    const rest = this.rest;
    if (rest === undefined || rest.size === 0) return this.firstKey === undefined ? { keys: [], namespace: DEFAULT_NS } : { keys: [this.firstKey], namespace: this.firstNs };
    if (rest.size > 1) return undefined;
    for (const [namespace, keys] of rest) {
      if (this.firstKey !== undefined && namespace !== this.firstNs) return undefined;
      const all = Array.from(keys);
      if (this.firstKey !== undefined) all.push(this.firstKey);
      return { keys: all.sort(), namespace };
    }
    return undefined;
  }

  *keys(): IterableIterator<Key> {
    if (this.firstKey !== undefined) yield this.firstKey;
    if (this.rest !== undefined) for (const keys of this.rest.values()) yield* keys;
  }
}

/**
 * One time domain's timers. Timers with the same time share a bucket, so a registration is a
 * dedup check of a few hash lookups and no allocation once the bucket exists; the distinct times
 * sit in a min-heap.
 */
/** The bucket being fired by fireUpTo, detached from the queue, and how far it got. */
interface Firing {
  time: number;
  bucket: Bucket;
  /** The last (key, namespace) fired; the bucket's timers after it in (key, namespace) order are pending. */
  lastKey: Key | undefined;
  lastNs: string;
  /** Pending timers of the bucket deleted while it fires ("ns\u0000key"). */
  cancelled: Set<string> | undefined;
}

const compareTimer = (k1: Key, n1: string, k2: Key, n2: string): number => compareStrings(k1, k2) || compareStrings(n1, n2);

export class TimerQueue {
  private readonly byTime = new Map<number, Bucket>();
  private readonly times = new NumberMinHeap();
  private count = 0;
  private firing: Firing | undefined = undefined;

  /** Number of registered timers. */
  get size(): number {
    return this.count;
  }

  /** Whether (key, time, namespace) is in the bucket being fired and not fired yet. */
  private pendingInFiring(key: Key, time: number, namespace: string): Firing | undefined {
    const f = this.firing;
    if (f === undefined || f.time !== time || !f.bucket.has(key, namespace)) return undefined;
    if (f.lastKey !== undefined && compareTimer(key, namespace, f.lastKey, f.lastNs) <= 0) return undefined; // already fired
    if (f.cancelled?.has(`${namespace}\u0000${key}`)) return undefined;
    return f;
  }

  /** Registers a timer; registering the same (key, time, namespace) again is a no-op. Returns whether it was new. */
  register(key: Key, time: number, namespace: string): boolean {
    if (this.firing !== undefined && this.pendingInFiring(key, time, namespace) !== undefined) return false;
    const bucket = this.byTime.get(time);
    if (bucket === undefined) {
      this.byTime.set(time, new Bucket(key, namespace));
      this.times.push(time);
    } else if (!bucket.add(key, namespace)) return false;
    this.count++;
    return true;
  }

  delete(key: Key, time: number, namespace: string): boolean {
    if (this.firing !== undefined) {
      const f = this.pendingInFiring(key, time, namespace);
      if (f !== undefined) {
        (f.cancelled ??= new Set()).add(`${namespace}\u0000${key}`);
        return true;
      }
    }
    const bucket = this.byTime.get(time);
    if (bucket === undefined || !bucket.remove(key, namespace)) return false;
    this.count--;
    if (bucket.count === 0) {
      // The time stays in the heap and is skipped when reached; rebuild if such stale times pile up.
      this.byTime.delete(time);
      if (this.times.size > 64 && this.times.size > 2 * this.byTime.size) this.rebuildTimes();
    }
    return true;
  }

  has(key: Key, time: number, namespace: string): boolean {
    if (this.firing !== undefined && this.pendingInFiring(key, time, namespace) !== undefined) return true;
    return this.byTime.get(time)?.has(key, namespace) ?? false;
  }

  /**
   * Fires every timer with time <= upTo: times ascending, each time's timers in (key, namespace)
   * order, including timers registered meanwhile at or below upTo. A time's bucket is detached
   * whole before it fires (no per-timer removal: with many keys sharing a time, each would be a
   * cache miss); an onTimer that deletes or re-registers a timer of that bucket still pending is
   * honoured, one that re-registers a timer already fired gets a new one.
   */
  fireUpTo(upTo: number, fire: (key: Key, namespace: string, time: number) => void): void {
    if (this.firing !== undefined) throw new Error("timers are already firing: fireUpTo is not re-entrant");
    for (let t = this.peekTime(); t !== undefined && t <= upTo; t = this.peekTime()) {
      const bucket = this.byTime.get(t) as Bucket;
      this.byTime.delete(t);
      this.count -= bucket.count;
      const single = bucket.sortedKeysOfSingleNamespace();
      const due = single === undefined ? bucket.sorted() : undefined;
      const f: Firing = { time: t, bucket, lastKey: undefined, lastNs: DEFAULT_NS, cancelled: undefined };
      this.firing = f;
      try {
        const n = single !== undefined ? single.keys.length : (due as DueTimer[]).length;
        for (let i = 0; i < n; i++) {
          const key = single !== undefined ? (single.keys[i] as Key) : (due as DueTimer[])[i]!.key;
          const ns = single !== undefined ? single.namespace : (due as DueTimer[])[i]!.namespace;
          if (f.cancelled !== undefined && f.cancelled.has(`${ns}\u0000${key}`)) continue;
          f.lastKey = key;
          f.lastNs = ns;
          fire(key, ns, t);
        }
      } finally {
        this.firing = undefined;
      }
    }
  }

  /** The earliest time with a timer, or undefined. */
  peekTime(): number | undefined {
    for (let t = this.times.peek(); t !== undefined; t = this.times.peek()) {
      if (this.byTime.has(t)) return t;
      this.times.pop(); // stale: every timer at t was deleted, or t was pushed twice
    }
    return undefined;
  }

  /** The timers at `time`, sorted by (key, namespace); they stay registered (see fireUpTo to fire them). */
  dueAt(time: number): DueTimer[] {
    return this.byTime.get(time)?.sorted() ?? [];
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
    for (const bucket of this.byTime.values()) for (const k of bucket.keys()) out.add(k);
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
