// Timer queues (Flink's InternalTimerService): per key and namespace, deduplicated, deletable,
// fired in time order. Ties at one time fire in (key, namespace) order, so that the output of a
// watermark does not depend on the order in which keys registered their timers (a replay with a
// different arrival order within the out-of-orderness bound emits the same sequence).
import type { BatchContext, Key, WatermarkContext } from "./api";
import { NumberMinHeap } from "./minheap";
import { bytesEqual, packValues, unpackValues } from "./snapshot-codec";
import { keptColumnsVerification } from "./state/backend";

/** A timer in a snapshot: [time, namespace, key]. */
export type TimerTuple = [number, string, Key];

/**
 * A queue's timers in a snapshot as packed ranges of time (TimerQueue.snapshotPacked): each chunk
 * the packValues of its range's tuples in snapshot order, the chunks in time order, so that their
 * tuples read in turn are the list TimerQueue.snapshot gives.
 */
export interface PackedTimers {
  packed: Uint8Array[];
}

/** The timers of a snapshot, in either form (lists were written before PackedTimers, and still are beside implied timers). */
export type TimersSnapshot = TimerTuple[] | PackedTimers;

/** A snapshot's timers as tuples, in snapshot order. */
export function timersFromSnapshot(timers: TimersSnapshot): TimerTuple[] {
  if (Array.isArray(timers)) return timers;
  const out: TimerTuple[] = [];
  for (const chunk of timers.packed) for (const t of unpackValues(chunk)) out.push(t as TimerTuple);
  return out;
}

/**
 * The width, in ms of timer time, of a range kept packed between snapshots. Changed timers cluster
 * in time (new ones about a window or a TTL after the watermark, fired ones at the watermark), so a
 * checkpoint packs again a few ranges and copies the rest: rebuilding and packing the whole list was
 * half of a 10 000-key velocity job's snapshot. A second's width puts a minute of cleanup timers in
 * some sixty ranges; key groups would not do, a second's changed timers spread over most of them.
 */
const TIMER_RANGE_MS = 1024;
const rangeOf = (time: number): number => Math.floor(time / TIMER_RANGE_MS);

/** A timer being fired: the engine sets the key in scope and calls onTimer. */
export interface DueTimer {
  key: Key;
  namespace: string;
}

/**
 * One time's due timers of one namespace, handed whole to an operator that fires them in one pass
 * (TimerQueue.fireUpTo's fireBatch): it can then look the keys' state up before firing any, so that
 * those lookups' cache misses overlap. The timers fire in `keys` order, one enter(i) each.
 */
export interface TimerBatch {
  readonly time: number;
  readonly namespace: string;
  /** The due keys, sorted (the order one-by-one firing uses). Not to be mutated. */
  readonly keys: readonly Key[];
  /**
   * Fires keys[i]'s timer: i must be 0, 1, 2... in turn, each once. False when the timer was
   * deleted since the batch was handed over (then nothing fires for that key).
   */
  enter(i: number): boolean;
}

/**
 * An operator that fires a time's event-time timers of one namespace in one call (OperatorHost)
 * rather than one onTimer per key.
 */
export interface FiresTimerBatches {
  /**
   * Does exactly what onTimer would do for each key in turn: timers.enter(i) first (the key and
   * the timer's time are then the context's), nothing for a key when it returns false.
   * ctx.forKey(k) puts a key in scope to read its state ahead of its turn.
   */
  onEventTimers(timers: TimerBatch, ctx: BatchContext & WatermarkContext): void;
}

const DEFAULT_NS = "";
const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Buckets up to this size are deduplicated and searched by a scan, with no hash set: a scan of
 * a few cache lines of pointers beats building a set for the ~20 timers a millisecond holds when
 * session windows move their timer on every record.
 */
const SCAN_UP_TO = 32;

/**
 * The timers of one time: (key, namespace) pairs in two parallel append-only arrays, with no hash
 * set on the common paths. Most times hold one timer (a session's end), and many hold thousands
 * registered in key order or without repeats (a dedup's expiry per id, a window's end per key):
 * a `Set` per time rehashed as it grew and was then copied and sorted, which profiles showed as a
 * fifth of dedup's time. Registrations are deduplicated exactly, by a scan in small buckets, by
 * order in large sorted ones (a key after the largest is new), and only otherwise by an index
 * (namespace -> keys) built on demand. With an index, removal leaves a dead entry in the arrays
 * (no O(n) splice in a bucket of 100 k keys); it is dropped when the bucket is read in order.
 */
class Bucket {
  keys: Key[];
  /** Each timer's namespace, parallel to `keys`; undefined while all are `ns0`. */
  nss: string[] | undefined = undefined;
  readonly ns0: string;
  /** The arrays are sorted by (key, namespace). */
  sorted = true;
  /** When set, exactly the live timers; the arrays then hold them plus dead or repeated entries. */
  index: Map<string, Set<Key>> | undefined = undefined;
  /**
   * Entries were appended without a check for repeats (no index, unsorted): `count` may then
   * exceed the live timers until the bucket is normalized or indexed.
   */
  unchecked = false;
  /** Live timers (an upper bound while `unchecked`). */
  count = 1;

  constructor(key: Key, ns: string) {
    this.keys = [key];
    this.ns0 = ns;
  }

  private nsAt(i: number): string {
    return this.nss === undefined ? this.ns0 : (this.nss[i] as string);
  }

  private find(key: Key, ns: string): number {
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) if (keys[i] === key && this.nsAt(i) === ns) return i;
    return -1;
  }

  /** Whether (key, ns) sorts after the last entry: appending it keeps the arrays sorted. */
  private afterLast(key: Key, ns: string): boolean {
    const n = this.keys.length;
    return n === 0 || compareTimer(this.keys[n - 1] as Key, this.nsAt(n - 1), key, ns) < 0;
  }

  private push(key: Key, ns: string): void {
    if (this.sorted) this.sorted = this.afterLast(key, ns);
    if (this.nss === undefined && ns !== this.ns0) this.nss = new Array<string>(this.keys.length).fill(this.ns0);
    this.keys.push(key);
    this.nss?.push(ns);
    this.count++;
  }

  private buildIndex(): Map<string, Set<Key>> {
    const index = new Map<string, Set<Key>>();
    for (let i = 0; i < this.keys.length; i++) {
      const ns = this.nsAt(i);
      let set = index.get(ns);
      if (set === undefined) index.set(ns, (set = new Set()));
      set.add(this.keys[i] as Key);
    }
    this.index = index;
    if (this.unchecked) {
      let n = 0;
      for (const set of index.values()) n += set.size;
      this.count = n;
      this.unchecked = false;
    }
    return index;
  }

  /** The exact number of live timers (drops repeats of an unchecked bucket first). */
  liveCount(): number {
    if (this.unchecked) this.normalize();
    return this.count;
  }

  has(key: Key, ns: string): boolean {
    if (this.index !== undefined) return this.index.get(ns)?.has(key) ?? false;
    if (this.keys.length <= SCAN_UP_TO) return this.find(key, ns) >= 0;
    return this.buildIndex().get(ns)?.has(key) ?? false;
  }

  /** Adds (key, ns); false when it is already there. */
  add(key: Key, ns: string): boolean {
    let index = this.index;
    if (index === undefined) {
      if (this.keys.length <= SCAN_UP_TO) {
        if (this.find(key, ns) >= 0) return false;
        this.push(key, ns);
        return true;
      }
      if (this.sorted && this.afterLast(key, ns)) {
        this.push(key, ns);
        return true;
      }
      // Out of order in a large bucket (random keys sharing a time): append unchecked rather than
      // hash every registration; a repeat is dropped when the bucket is next read (normalize).
      this.push(key, ns);
      this.unchecked = true;
      return true;
    }
    let set = index.get(ns);
    if (set === undefined) index.set(ns, (set = new Set()));
    const before = set.size;
    set.add(key);
    if (set.size === before) return false;
    this.push(key, ns);
    return true;
  }

  remove(key: Key, ns: string): boolean {
    if (this.index === undefined && this.keys.length <= SCAN_UP_TO) {
      const i = this.find(key, ns);
      if (i < 0) return false;
      this.keys.splice(i, 1);
      this.nss?.splice(i, 1);
      this.count--;
      return true;
    }
    const index = this.index ?? this.buildIndex();
    if (!(index.get(ns)?.delete(key) ?? false)) return false;
    this.sorted = false; // a dead entry stays in the arrays until they are read in order
    this.count--;
    // Timers that move on every record (sessions) leave mostly dead entries: compact them away.
    if (this.keys.length > 2 * this.count + SCAN_UP_TO) this.compact(index);
    return true;
  }

  /** Drops the dead entries (keeps the index and the arrays' relative order). */
  private compact(index: Map<string, Set<Key>>): void {
    const keys: Key[] = [];
    const nss: string[] | undefined = this.nss === undefined ? undefined : [];
    for (let i = 0; i < this.keys.length; i++) {
      const k = this.keys[i] as Key;
      const ns = this.nsAt(i);
      if (!(index.get(ns)?.has(k) ?? false)) continue;
      keys.push(k);
      nss?.push(ns);
    }
    this.keys = keys;
    this.nss = nss;
  }

  /** Drops dead and repeated entries and sorts the arrays by (key, namespace). */
  private normalize(): void {
    if (this.sorted && this.index === undefined) return;
    const index = this.index;
    const live = (i: number): boolean => index === undefined || (index.get(this.nsAt(i))?.has(this.keys[i] as Key) ?? false);
    if (this.nss === undefined) {
      const all = index === undefined ? this.keys : this.keys.filter((_, i) => live(i));
      all.sort(); // code-unit order, as compareStrings
      let n = 0;
      for (let i = 0; i < all.length; i++) if (n === 0 || all[i] !== all[n - 1]) all[n++] = all[i] as Key;
      all.length = n;
      this.keys = all;
    } else {
      const nss = this.nss;
      const order: number[] = [];
      for (let i = 0; i < this.keys.length; i++) if (live(i)) order.push(i);
      order.sort((a, b) => compareTimer(this.keys[a] as Key, nss[a] as string, this.keys[b] as Key, nss[b] as string));
      const keys: Key[] = [];
      const out: string[] = [];
      for (const i of order) {
        const k = this.keys[i] as Key;
        const ns = nss[i] as string;
        if (keys.length > 0 && keys[keys.length - 1] === k && out[out.length - 1] === ns) continue;
        keys.push(k);
        out.push(ns);
      }
      this.keys = keys;
      this.nss = out;
    }
    this.sorted = true;
    this.index = undefined;
    this.unchecked = false;
    this.count = this.keys.length;
  }

  /** The live timers sorted by (key, namespace), as parallel arrays (nss undefined: all in ns0). Not to be mutated. */
  inOrder(): { keys: readonly Key[]; nss: readonly string[] | undefined; ns0: string } {
    this.normalize();
    return { keys: this.keys, nss: this.nss, ns0: this.ns0 };
  }

  due(): DueTimer[] {
    const { keys, nss, ns0 } = this.inOrder();
    return keys.map((key, i) => ({ key, namespace: nss === undefined ? ns0 : (nss[i] as string) }));
  }

  keysOf(): readonly Key[] {
    return this.inOrder().keys;
  }
}

const compareTimer = (k1: Key, n1: string, k2: Key, n2: string): number => compareStrings(k1, k2) || compareStrings(n1, n2);

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

export class TimerQueue {
  private readonly byTime = new Map<number, Bucket>();
  private readonly times = new NumberMinHeap();
  /** Registered timers; an upper bound while buckets in `unchecked` may hold repeats. */
  private count = 0;
  /** Buckets that took unchecked appends since `size` last looked. */
  private readonly unchecked: Array<[number, Bucket]> = [];
  private firing: Firing | undefined = undefined;
  /**
   * The packed bytes of each range of time whose timers did not change since the last
   * snapshotPacked (a change drops its range); undefined until the first, so that a queue never
   * snapshotted pays nothing on its registrations.
   */
  private kept: Map<number, Uint8Array> | undefined = undefined;

  /** Number of registered timers (exact: buckets with unchecked appends are deduplicated first). */
  get size(): number {
    this.settle();
    return this.count;
  }

  /**
   * Drops the repeats of buckets that took unchecked appends, keeping `count` exact. Every read
   * of whole buckets (size, dueAt, snapshot, keys) settles first: normalizing a bucket elsewhere
   * would change its count behind the queue's back.
   */
  private settle(): void {
    if (this.unchecked.length > 0) {
      for (const [t, b] of this.unchecked) {
        if (this.byTime.get(t) !== b || !b.unchecked) continue; // fired or normalized meanwhile
        const before = b.count;
        this.count -= before - b.liveCount();
      }
      this.unchecked.length = 0;
    }
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
      this.count++;
      this.kept?.delete(rangeOf(time));
    } else {
      const wasUnchecked = bucket.unchecked;
      const before = bucket.count;
      if (!bucket.add(key, namespace)) {
        if (bucket.count !== before) this.count += bucket.count - before; // an index dropped repeats
        return false;
      }
      this.count += bucket.count - before;
      this.kept?.delete(rangeOf(time));
      if (bucket.unchecked && !wasUnchecked) {
        this.unchecked.push([time, bucket]);
        // Without a `size` call (no metrics polled) fired buckets would stay referenced here.
        if (this.unchecked.length > 64 + 2 * this.byTime.size) this.pruneUnchecked();
      }
    }
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
    if (bucket === undefined) return false;
    const before = bucket.count;
    const removed = bucket.remove(key, namespace);
    this.count += bucket.count - before; // -1, and any repeats an index dropped
    if (!removed) return false;
    this.kept?.delete(rangeOf(time));
    if (bucket.count === 0) {
      // The time stays in the heap and is skipped when reached; rebuild if such stale times pile up.
      this.byTime.delete(time);
      if (this.times.size > 64 && this.times.size > 2 * this.byTime.size) this.rebuildTimes();
    }
    return true;
  }

  has(key: Key, time: number, namespace: string): boolean {
    if (this.firing !== undefined && this.pendingInFiring(key, time, namespace) !== undefined) return true;
    const bucket = this.byTime.get(time);
    if (bucket === undefined) return false;
    const before = bucket.count;
    const found = bucket.has(key, namespace);
    this.count += bucket.count - before; // an index built for the lookup dropped repeats
    return found;
  }

  private pruneUnchecked(): void {
    const keep = this.unchecked.filter(([t, b]) => b.unchecked && this.byTime.get(t) === b);
    this.unchecked.length = 0;
    this.unchecked.push(...keep);
  }

  /**
   * Fires every timer with time <= upTo: times ascending, each time's timers in (key, namespace)
   * order, including timers registered meanwhile at or below upTo. A time's bucket is detached
   * whole before it fires (no per-timer removal: with many keys sharing a time, each would be a
   * cache miss); an onTimer that deletes or re-registers a timer of that bucket still pending is
   * honoured, one that re-registers a timer already fired gets a new one. With fireBatch, a
   * bucket whose timers share one namespace is handed over whole instead (see TimerBatch).
   */
  fireUpTo(upTo: number, fire: (key: Key, namespace: string, time: number) => void, fireBatch?: (batch: TimerBatch) => void): void {
    if (this.firing !== undefined) throw new Error("timers are already firing: fireUpTo is not re-entrant");
    for (let t = this.peekTime(); t !== undefined && t <= upTo; t = this.peekTime()) {
      const bucket = this.byTime.get(t) as Bucket;
      this.byTime.delete(t);
      this.kept?.delete(rangeOf(t));
      this.count -= bucket.count; // before inOrder() drops repeats: what was counted goes
      const { keys, nss, ns0 } = bucket.inOrder();
      const f: Firing = { time: t, bucket, lastKey: undefined, lastNs: DEFAULT_NS, cancelled: undefined };
      this.firing = f;
      try {
        // A bucket of one namespace (a window operator's) goes whole to fireBatch, when given.
        if (fireBatch !== undefined && nss === undefined) {
          this.fireWhole(f, keys, ns0, fireBatch);
          continue;
        }
        const n = keys.length;
        for (let i = 0; i < n; i++) {
          const key = keys[i] as Key;
          const ns = nss === undefined ? ns0 : (nss[i] as string);
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

  /** Hands a detached bucket of one namespace to fireBatch, which enters each timer in turn as fire would be called. */
  private fireWhole(f: Firing, keys: readonly Key[], ns: string, fireBatch: (batch: TimerBatch) => void): void {
    let next = 0;
    const batch: TimerBatch = {
      time: f.time,
      namespace: ns,
      keys,
      enter: (i: number): boolean => {
        if (i !== next) throw new Error(`timer batch at ${f.time}: entered timer ${i}, expected ${next} (each in turn, once)`);
        next++;
        const key = keys[i] as Key;
        if (f.cancelled !== undefined && f.cancelled.has(`${ns}\u0000${key}`)) return false;
        f.lastKey = key;
        f.lastNs = ns;
        return true;
      },
    };
    fireBatch(batch);
    // A timer never entered would be lost silently: the bucket is detached already.
    if (next !== keys.length) throw new Error(`timer batch at ${f.time}: ${keys.length - next} of ${keys.length} timers were not fired`);
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
    this.settle();
    return this.byTime.get(time)?.due() ?? [];
  }

  /** Every timer, sorted by (time, key, namespace): the deterministic snapshot form. */
  snapshot(): TimerTuple[] {
    const out: TimerTuple[] = [];
    const times = Array.from(this.byTime.keys()).sort((a, b) => a - b);
    for (const t of times) for (const d of this.dueAt(t)) out.push([t, d.namespace, d.key]);
    return out;
  }

  /**
   * The snapshot form kept between checkpoints: snapshot()'s list packed in ranges of time, of
   * which only those changed since the last call are packed again (see TIMER_RANGE_MS).
   */
  snapshotPacked(): PackedTimers {
    this.settle();
    const kept = (this.kept ??= new Map());
    // Tests check every kept range against its timers packed afresh (as the heap tables' kept columns).
    const verify = keptColumnsVerification();
    const ranges = new Map<number, number[]>();
    for (const t of this.byTime.keys()) {
      const r = rangeOf(t);
      let times = ranges.get(r);
      if (times === undefined) ranges.set(r, (times = []));
      if (verify || !kept.has(r)) times.push(t);
    }
    const packed: Uint8Array[] = [];
    for (const r of [...ranges.keys()].sort((a, b) => a - b)) {
      let bytes = kept.get(r);
      if (bytes === undefined || verify) {
        const fresh = this.packRange(ranges.get(r) as number[]);
        if (bytes !== undefined && !bytesEqual(bytes, fresh)) throw new Error(`timer range ${r * TIMER_RANGE_MS}..${(r + 1) * TIMER_RANGE_MS} ms: kept bytes differ from its timers`);
        bytes = fresh;
        kept.set(r, bytes);
      }
      packed.push(bytes);
    }
    return { packed };
  }

  /** The timers at `times` (one range's) as packed snapshot tuples, in snapshot order. */
  private packRange(times: number[]): Uint8Array {
    times.sort((a, b) => a - b);
    const tuples: TimerTuple[] = [];
    for (const t of times) {
      const { keys, nss, ns0 } = (this.byTime.get(t) as Bucket).inOrder();
      for (let i = 0; i < keys.length; i++) tuples.push([t, nss === undefined ? ns0 : (nss[i] as string), keys[i] as Key]);
    }
    return packValues(tuples);
  }

  restore(timers: readonly TimerTuple[], keep?: (key: Key) => boolean): void {
    this.clear();
    for (const [time, namespace, key] of timers) if (!keep || keep(key)) this.register(key, time, namespace);
  }

  /** The keys holding timers, for state stats (a key with only a timer still counts as a key). */
  keys(): Set<Key> {
    this.settle();
    const out = new Set<Key>();
    for (const bucket of this.byTime.values()) for (const k of bucket.keysOf()) out.add(k);
    return out;
  }

  clear(): void {
    this.kept = undefined;
    this.byTime.clear();
    this.times.clear();
    this.unchecked.length = 0;
    this.count = 0;
  }

  private rebuildTimes(): void {
    this.times.clear();
    for (const t of this.byTime.keys()) this.times.push(t);
  }
}
