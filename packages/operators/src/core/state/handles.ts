// State handles (value, list, map) scoped to the current key, with Flink-style state TTL.
// TTL runs on event time, not the wall clock, so that a replay expires exactly the same state:
//   - the TTL clock is the operator's current watermark, except while an event-time timer fires:
//     then it is the timer's time. A watermark advance fires many timers under one new watermark,
//     and at end of input that watermark is +∞: judged against it, every entry would be expired
//     (stamp + ttl <= ∞), so a value written by one end-of-input timer would be invisible to the
//     next. Active cleanup still runs at the watermark itself, so end of input frees everything;
//   - an entry's stamp is the event time of the record or timer that wrote (or, with
//     onReadAndWrite, read) it, but never below the TTL clock, so a late record's write does not
//     start out already expired, and never below its previous stamp: a write stamped earlier
//     (an out-of-order record) does not shorten what an earlier write promised;
//   - an entry is expired once stamp + ttlMs <= the TTL clock. Expired
//     entries are never returned (lazy expiry on access); the ExpiryIndex also removes them
//     actively as the watermark advances, so keys that are never seen again free their memory.
// As in Flink, list state expires per element and map state per map entry.
import type { Key, ListState, MapState, StateTtlConfig, ValueState } from "../api";
import type { StateTable } from "./backend";
import { NumberMinHeap } from "../minheap";

/** What the handles read of the engine: the current key and the TTL clock. The host owns it. */
export interface KeyScope {
  readonly nodeId: string;
  /** The key of the record or timer being processed; undefined outside a keyed context. */
  key: Key | undefined;
  /** Event time of the record or timer being processed. */
  timestamp: number;
  /** The operator's current watermark. */
  watermark: number;
  /**
   * The TTL clock: the watermark, except while an event-time timer fires, when it is the timer's
   * time (never +∞ while timers fire at end of input). The host keeps it.
   */
  ttlTime: number;
}

/** A TTL'd entry in stored form (Flink's TtlValue): the value and its last-access stamp. */
export interface TtlEntry<T> {
  v: T;
  t: number;
}

function currentKey(scope: KeyScope, stateName: string): Key {
  const k = scope.key;
  if (k === undefined) {
    throw new Error(`node "${scope.nodeId}": keyed state "${stateName}" used outside a keyed context; put a keyBy before this operator, or use it only in processElement/onTimer`);
  }
  return k;
}

const stampOf = (scope: KeyScope): number => (scope.timestamp > scope.ttlTime ? scope.timestamp : scope.ttlTime);
/** A rewrite keeps the later of the old and the new stamp (stamps only move expiry later). */
const restamp = (old: number, scope: KeyScope): number => {
  const t = stampOf(scope);
  return t > old ? t : old;
};

// ---- Expiry index (active TTL cleanup) --------------------------------------------------------

/** A TTL'd table that can purge one key's expired entries and tell its next expiry. */
export interface TtlTableCleaner {
  /** Removes the key's expired entries; returns the time its earliest live entry expires, or undefined when none is left. */
  purge(key: Key, now: number): number | undefined;
}

/** The (table, key) pairs due for a look at one time, as parallel arrays. */
interface ExpiryBucket {
  keys: Key[];
  cleaners: TtlHandleLike[];
}

/** A cleaner with the set of its keys that are indexed. */
interface TtlHandleLike extends TtlTableCleaner {
  readonly indexed: Set<Key>;
}

/**
 * Active TTL cleanup: one entry per (TTL'd table, key) at the key's earliest possible expiry.
 * When the watermark passes it, the key's expired entries are removed, and the key is indexed
 * again at its next expiry if anything is left (refreshed stamps only move expiry later).
 * Entries of one time share a bucket of two parallel arrays, and only the distinct times sit in
 * a heap: no object per key and no O(log n) heap sift per key (a million live keys under TTL
 * allocated a million index objects). The order of purges within a time does not matter: a
 * purge removes only entries that are already invisible.
 */
export class ExpiryIndex {
  private readonly byTime = new Map<number, ExpiryBucket>();
  private readonly times = new NumberMinHeap();
  private count = 0;

  get size(): number {
    return this.count;
  }

  track(cleaner: TtlHandleLike, indexed: Set<Key>, key: Key, expiry: number): void {
    if (indexed.has(key)) return;
    indexed.add(key);
    this.push(cleaner, key, expiry);
  }

  private push(cleaner: TtlHandleLike, key: Key, time: number): void {
    let b = this.byTime.get(time);
    if (b === undefined) {
      b = { keys: [], cleaners: [] };
      this.byTime.set(time, b);
      this.times.push(time);
    }
    b.keys.push(key);
    b.cleaners.push(cleaner);
    this.count++;
  }

  /** Purges everything expired at `now` (the watermark). Returns how many keys were looked at. */
  cleanup(now: number): number {
    let n = 0;
    for (let t = this.times.peek(); t !== undefined && t <= now; t = this.times.peek()) {
      this.times.pop();
      const b = this.byTime.get(t);
      if (b === undefined) continue;
      this.byTime.delete(t);
      this.count -= b.keys.length;
      for (let i = 0; i < b.keys.length; i++) {
        const key = b.keys[i] as Key;
        const cleaner = b.cleaners[i] as TtlHandleLike;
        n++;
        const next = cleaner.purge(key, now);
        if (next === undefined) cleaner.indexed.delete(key);
        else this.push(cleaner, key, next); // next > now: the entry is live
      }
    }
    return n;
  }

  clear(): void {
    this.byTime.clear();
    this.times.clear();
    this.count = 0;
  }
}

// ---- Plain handles (no TTL) -------------------------------------------------------------------

const EMPTY: readonly never[] = Object.freeze([]);

export class PlainValueState<T> implements ValueState<T> {
  /**
   * The last (key, value) read or written. On a by-reference table, update() of the object just
   * read (mutated in place, the window operators' pattern) skips a second hash-table write: on the
   * per-record path over many keys each table access is a cache miss.
   */
  private lastKey: Key | undefined = undefined;
  private lastValue: T | undefined = undefined;
  private readonly byReference: boolean;

  constructor(
    private readonly table: StateTable<T>,
    private readonly scope: KeyScope,
  ) {
    this.byReference = table.storesByReference === true;
  }
  value(): T | undefined {
    const k = currentKey(this.scope, this.table.name);
    const v = this.table.get(k);
    this.lastKey = k;
    this.lastValue = v;
    return v;
  }
  update(value: T): void {
    if (value === undefined) throw new Error(`node "${this.scope.nodeId}": value state "${this.table.name}" cannot hold undefined; call clear() instead`);
    const k = currentKey(this.scope, this.table.name);
    if (this.byReference && value === this.lastValue && k === this.lastKey) {
      this.table.changedInPlace?.(k);
      return;
    }
    this.table.put(k, value);
    this.lastKey = k;
    this.lastValue = value;
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
    this.lastKey = undefined;
    this.lastValue = undefined;
  }
}

export class PlainListState<T> implements ListState<T> {
  constructor(
    private readonly table: StateTable<T[]>,
    private readonly scope: KeyScope,
  ) {}
  get(): readonly T[] {
    return this.table.get(currentKey(this.scope, this.table.name)) ?? EMPTY;
  }
  add(value: T): void {
    const k = currentKey(this.scope, this.table.name);
    const list = this.table.get(k);
    if (list === undefined) this.table.put(k, [value]);
    else {
      list.push(value);
      this.table.put(k, list);
    }
  }
  update(values: readonly T[]): void {
    const k = currentKey(this.scope, this.table.name);
    if (values.length === 0) this.table.delete(k);
    else this.table.put(k, values.slice());
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
  }
}

export class PlainMapState<V> implements MapState<V> {
  constructor(
    private readonly table: StateTable<Map<string, V>>,
    private readonly scope: KeyScope,
  ) {}
  private map(): Map<string, V> | undefined {
    return this.table.get(currentKey(this.scope, this.table.name));
  }
  get(mapKey: string): V | undefined {
    return this.map()?.get(mapKey);
  }
  put(mapKey: string, value: V): void {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined) this.table.put(k, new Map([[mapKey, value]]));
    else {
      m.set(mapKey, value);
      this.table.put(k, m);
    }
  }
  remove(mapKey: string): void {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined || !m.delete(mapKey)) return;
    if (m.size === 0) this.table.delete(k);
    else this.table.put(k, m);
  }
  contains(mapKey: string): boolean {
    return this.map()?.has(mapKey) ?? false;
  }
  entries(): IterableIterator<[string, V]> {
    return (this.map() ?? new Map<string, V>()).entries();
  }
  keys(): IterableIterator<string> {
    return (this.map() ?? new Map<string, V>()).keys();
  }
  isEmpty(): boolean {
    return (this.map()?.size ?? 0) === 0;
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
  }
}

// ---- TTL handles --------------------------------------------------------------------------------

abstract class TtlHandle<S> implements TtlTableCleaner {
  protected readonly ttlMs: number;
  protected readonly refreshOnRead: boolean;
  readonly indexed = new Set<Key>();

  constructor(
    protected readonly table: StateTable<S>,
    protected readonly scope: KeyScope,
    ttl: StateTtlConfig,
    protected readonly index: ExpiryIndex,
  ) {
    if (!(ttl.ttlMs > 0) || !Number.isFinite(ttl.ttlMs)) {
      throw new Error(`node "${scope.nodeId}": state "${table.name}" has ttlMs ${ttl.ttlMs}; a TTL must be a positive number of milliseconds`);
    }
    this.ttlMs = ttl.ttlMs;
    this.refreshOnRead = ttl.updateType === "onReadAndWrite";
    // After a restore the table already holds entries: index them so they expire actively too.
    for (const [k, s] of table.entries()) {
      const next = this.earliestStamp(s);
      if (next !== undefined) index.track(this, this.indexed, k, next + this.ttlMs);
    }
  }

  protected expired(stamp: number): boolean {
    return stamp + this.ttlMs <= this.scope.ttlTime;
  }

  protected track(key: Key): void {
    if (!this.indexed.has(key)) this.index.track(this, this.indexed, key, stampOf(this.scope) + this.ttlMs);
  }

  /** The smallest stamp among the stored entries of one key. */
  protected abstract earliestStamp(stored: S): number | undefined;
  abstract purge(key: Key, now: number): number | undefined;
}

export class TtlValueState<T> extends TtlHandle<TtlEntry<T>> implements ValueState<T> {
  /**
   * The live entry last read or written, and its key. On a by-reference table, update() right
   * after value() of the same key (the read-modify-write of every keyed operator) restamps that
   * entry in place instead of a second hash lookup and write: over a million keys each lookup is
   * a cache miss.
   */
  private lastKey: Key | undefined = undefined;
  private lastEntry: TtlEntry<T> | undefined = undefined;
  private readonly byReference = this.table.storesByReference === true;

  value(): T | undefined {
    const k = currentKey(this.scope, this.table.name);
    const e = this.table.get(k);
    this.lastKey = undefined;
    if (e === undefined) return undefined;
    if (this.expired(e.t)) {
      this.table.delete(k);
      return undefined;
    }
    if (this.refreshOnRead) {
      e.t = restamp(e.t, this.scope);
      this.table.put(k, e);
    }
    this.lastKey = k;
    this.lastEntry = e;
    return e.v;
  }
  update(value: T): void {
    if (value === undefined) throw new Error(`node "${this.scope.nodeId}": value state "${this.table.name}" cannot hold undefined; call clear() instead`);
    const k = currentKey(this.scope, this.table.name);
    const e = this.byReference && k === this.lastKey ? this.lastEntry : this.table.get(k);
    if (e === undefined) {
      const created = { v: value, t: stampOf(this.scope) };
      this.table.put(k, created);
      this.lastKey = k;
      this.lastEntry = created;
      // Only a new entry can be missing from the expiry index: an existing entry's key is indexed
      // until a purge finds it gone (see ExpiryIndex), so rewrites skip the index's set lookup.
      this.track(k);
    } else {
      e.v = value;
      e.t = restamp(e.t, this.scope);
      if (this.byReference) this.table.changedInPlace?.(k);
      else this.table.put(k, e);
    }
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
    this.lastKey = undefined;
    this.lastEntry = undefined;
  }
  protected earliestStamp(stored: TtlEntry<T>): number {
    return stored.t;
  }
  purge(key: Key, now: number): number | undefined {
    const e = this.table.get(key);
    if (e === undefined) return undefined;
    if (e.t + this.ttlMs <= now) {
      this.table.delete(key);
      if (key === this.lastKey) this.lastKey = undefined; // the remembered entry is gone
      return undefined;
    }
    return e.t + this.ttlMs;
  }
}

export class TtlListState<T> extends TtlHandle<Array<TtlEntry<T>>> implements ListState<T> {
  get(): readonly T[] {
    const k = currentKey(this.scope, this.table.name);
    const list = this.table.get(k);
    if (list === undefined) return EMPTY;
    const out: T[] = [];
    let live = 0;
    const stamp = stampOf(this.scope);
    for (const e of list) {
      if (this.expired(e.t)) continue;
      if (this.refreshOnRead) e.t = stamp;
      list[live++] = e;
      out.push(e.v);
    }
    if (live === 0) this.table.delete(k);
    else if (live !== list.length || this.refreshOnRead) {
      list.length = live;
      this.table.put(k, list);
    }
    return out;
  }
  add(value: T): void {
    const k = currentKey(this.scope, this.table.name);
    const list = this.table.get(k);
    const e = { v: value, t: stampOf(this.scope) };
    if (list === undefined) this.table.put(k, [e]);
    else {
      list.push(e);
      this.table.put(k, list);
    }
    this.track(k);
  }
  update(values: readonly T[]): void {
    const k = currentKey(this.scope, this.table.name);
    if (values.length === 0) {
      this.table.delete(k);
      return;
    }
    const t = stampOf(this.scope);
    this.table.put(
      k,
      values.map((v) => ({ v, t })),
    );
    this.track(k);
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
  }
  protected earliestStamp(stored: Array<TtlEntry<T>>): number | undefined {
    let min: number | undefined;
    for (const e of stored) if (min === undefined || e.t < min) min = e.t;
    return min;
  }
  purge(key: Key, now: number): number | undefined {
    const list = this.table.get(key);
    if (list === undefined) return undefined;
    const kept = list.filter((e) => e.t + this.ttlMs > now);
    if (kept.length === 0) {
      this.table.delete(key);
      return undefined;
    }
    if (kept.length !== list.length) this.table.put(key, kept);
    return (this.earliestStamp(kept) as number) + this.ttlMs;
  }
}

export class TtlMapState<V> extends TtlHandle<Map<string, TtlEntry<V>>> implements MapState<V> {
  private liveEntry(k: Key, m: Map<string, TtlEntry<V>>, mapKey: string): TtlEntry<V> | undefined {
    const e = m.get(mapKey);
    if (e === undefined) return undefined;
    if (this.expired(e.t)) {
      m.delete(mapKey);
      if (m.size === 0) this.table.delete(k);
      else this.table.put(k, m);
      return undefined;
    }
    return e;
  }
  get(mapKey: string): V | undefined {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined) return undefined;
    const e = this.liveEntry(k, m, mapKey);
    if (e === undefined) return undefined;
    if (this.refreshOnRead) {
      e.t = stampOf(this.scope);
      this.table.put(k, m);
    }
    return e.v;
  }
  put(mapKey: string, value: V): void {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined) this.table.put(k, new Map([[mapKey, { v: value, t: stampOf(this.scope) }]]));
    else {
      const old = m.get(mapKey);
      m.set(mapKey, { v: value, t: old === undefined ? stampOf(this.scope) : restamp(old.t, this.scope) });
      this.table.put(k, m);
    }
    this.track(k);
  }
  remove(mapKey: string): void {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined || !m.delete(mapKey)) return;
    if (m.size === 0) this.table.delete(k);
    else this.table.put(k, m);
  }
  contains(mapKey: string): boolean {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    return m !== undefined && this.liveEntry(k, m, mapKey) !== undefined;
  }
  /** Live entries only; drops the expired ones it meets. Refreshes stamps under onReadAndWrite. */
  private live(): Array<[string, TtlEntry<V>]> {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined) return [];
    const out: Array<[string, TtlEntry<V>]> = [];
    const stamp = stampOf(this.scope);
    for (const [mk, e] of m) {
      if (this.expired(e.t)) m.delete(mk);
      else {
        if (this.refreshOnRead) e.t = stamp;
        out.push([mk, e]);
      }
    }
    if (m.size === 0) this.table.delete(k);
    else this.table.put(k, m);
    return out;
  }
  entries(): IterableIterator<[string, V]> {
    return this.live()
      .map(([mk, e]): [string, V] => [mk, e.v])
      [Symbol.iterator]();
  }
  keys(): IterableIterator<string> {
    return this.live()
      .map(([mk]) => mk)
      [Symbol.iterator]();
  }
  isEmpty(): boolean {
    const k = currentKey(this.scope, this.table.name);
    const m = this.table.get(k);
    if (m === undefined) return true;
    for (const e of m.values()) if (!this.expired(e.t)) return false;
    return true;
  }
  clear(): void {
    this.table.delete(currentKey(this.scope, this.table.name));
  }
  protected earliestStamp(stored: Map<string, TtlEntry<V>>): number | undefined {
    let min: number | undefined;
    for (const e of stored.values()) if (min === undefined || e.t < min) min = e.t;
    return min;
  }
  purge(key: Key, now: number): number | undefined {
    const m = this.table.get(key);
    if (m === undefined) return undefined;
    for (const [mk, e] of m) if (e.t + this.ttlMs <= now) m.delete(mk);
    if (m.size === 0) {
      this.table.delete(key);
      return undefined;
    }
    this.table.put(key, m);
    return (this.earliestStamp(m) as number) + this.ttlMs;
  }
}
