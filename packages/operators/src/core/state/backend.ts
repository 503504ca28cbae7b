// The keyed state backend: where an operator's keyed state lives, one table per state name.
// The heap implementation keeps JS Maps; the runner may plug an on-disk backend behind the same
// synchronous interface (Flink's HashMapStateBackend versus EmbeddedRocksDBStateBackend).
import type { Key } from "../api";
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from "../keys";
import { estimateBytes, MAP_ENTRY_OVERHEAD } from "./size";

export type StateKind = "value" | "list" | "map";

/**
 * The state of one descriptor, for all keys. Values are in their stored form (see handles.ts:
 * TTL'd values carry their last-access stamp; map state is a JS Map of its entries).
 * Everything is synchronous: operators run on one thread without awaiting.
 */
export interface StateTable<V = unknown> {
  readonly name: string;
  readonly kind: StateKind;
  /**
   * The table keeps the very objects it is given (the heap backend), so writing back the object
   * just read is a no-op the handles may skip. A serializing (on-disk) backend leaves it unset.
   */
  readonly storesByReference?: boolean;
  get(key: Key): V | undefined;
  put(key: Key, value: V): void;
  delete(key: Key): void;
  has(key: Key): boolean;
  /** Number of keys with an entry. */
  readonly size: number;
  keys(): IterableIterator<Key>;
  entries(): IterableIterator<[Key, V]>;
}

/** One table in a snapshot: entries sorted by (key group, key), map-kind values as [mapKey, value] pairs. */
export interface TableSnapshot {
  name: string;
  kind: StateKind;
  entries: Array<[Key, unknown]>;
}

export interface StateBackendStats {
  /** Distinct keys with an entry in any table. */
  keys: number;
  /** Entries over all tables (a map state's entries each count). */
  stateEntries: number;
  /** Estimated heap bytes of the entries (keys, values, Map overhead); sampled on big tables. */
  stateBytes: number;
}

export interface KeyedStateBackend {
  /** The table for a state name, created on first use. A name keeps one kind for its life. */
  table<V>(name: string, kind: StateKind): StateTable<V>;
  tables(): readonly StateTable<unknown>[];
  /** Deterministic: tables by name, entries by (key group, key), whatever the insertion history. */
  snapshot(maxParallelism?: number): TableSnapshot[];
  /** Replaces all state. `keep` filters keys (a subtask restoring only its key-group range). */
  restore(tables: readonly TableSnapshot[], keep?: (key: Key) => boolean): void;
  stats(): StateBackendStats;
  /**
   * Optional, heap backends only: keep `table` as the state of its name, by reference, in the
   * operator's own layout (flat columns by slot, see slots.ts), after handing it through load()
   * the entries restored for that name so far. The backend snapshots and counts it through its
   * StateTable members like any other table. An operator asks for this through
   * RuntimeContext.adoptState and keeps to its generic handles when the backend lacks it (an
   * on-disk backend), so one operator logic runs on both.
   */
  adoptTable?(table: AdoptedTable): void;
}

/** A table kept in an operator's own layout (see KeyedStateBackend.adoptTable). */
export interface AdoptedTable extends StateTable<unknown> {
  /** Takes the restored entries of its name (stored form, as its entries() gives them). */
  load(entries: ReadonlyArray<readonly [Key, unknown]>): void;
  /** The heap bytes of the whole table when the table knows them better than a per-entry estimate. */
  estimatedBytes?(): number;
  /**
   * The event-time timers ([time, namespace, key]) the operator's handle storage would hold for
   * this state, written into snapshots beside the real ones: a checkpoint taken on the heap then
   * restores exactly on a backend without adoption (and back: the host drops timers of these
   * namespaces from its queue when the table is adopted after a restore, since the table itself
   * schedules that work).
   */
  impliedTimers?(): Array<[number, string, Key]>;
  readonly impliedTimerNamespaces?: readonly string[];
}

class HeapStateTable<V> implements StateTable<V> {
  readonly map = new Map<Key, V>();
  readonly storesByReference = true;
  constructor(
    readonly name: string,
    readonly kind: StateKind,
  ) {}
  get(key: Key): V | undefined {
    return this.map.get(key);
  }
  put(key: Key, value: V): void {
    this.map.set(key, value);
  }
  delete(key: Key): void {
    this.map.delete(key);
  }
  has(key: Key): boolean {
    return this.map.has(key);
  }
  get size(): number {
    return this.map.size;
  }
  keys(): IterableIterator<Key> {
    return this.map.keys();
  }
  entries(): IterableIterator<[Key, V]> {
    return this.map.entries();
  }
}

/**
 * Keys ordered by (key group, key): bucketed by key group (murmur per key is cheaper than caching
 * it), each bucket sorted by the default sort (UTF-16 order, as `<`). A comparator looking up both
 * keys' groups made a checkpoint of 100 k keys cost seconds (n log n map lookups).
 */
function sortedByKeyGroup(keys: Iterable<Key>, maxParallelism: number): Key[] {
  const buckets: Key[][] = [];
  for (const k of keys) (buckets[keyGroupOf(k, maxParallelism)] ??= []).push(k);
  const out: Key[] = [];
  for (const b of buckets) {
    if (b === undefined) continue;
    if (b.length > 1) b.sort();
    for (const k of b) out.push(k);
  }
  return out;
}

/** The table's entries in `keys`' order; undefined when a key has no entry (the order is another table's). */
function entriesInOrder(t: StateTable<unknown>, keys: readonly Key[]): Array<[Key, unknown]> | undefined {
  const out: Array<[Key, unknown]> = new Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as Key;
    const v = t.get(k);
    if (v === undefined) return undefined;
    out[i] = [k, v];
  }
  return out;
}

/** Above this many entries, stats() estimates value sizes from an evenly spaced sample. */
const STATS_SAMPLE = 2_000;

export class HeapKeyedStateBackend implements KeyedStateBackend {
  private readonly byName = new Map<string, StateTable<unknown>>();

  table<V>(name: string, kind: StateKind): StateTable<V> {
    let t = this.byName.get(name);
    if (t === undefined) {
      t = new HeapStateTable<unknown>(name, kind);
      this.byName.set(name, t);
    } else if (t.kind !== kind) {
      throw new Error(`state "${name}" is declared as ${kind} state but already exists as ${t.kind} state; state names must be unique within an operator`);
    }
    return t as StateTable<V>;
  }

  adoptTable(table: AdoptedTable): void {
    const old = this.byName.get(table.name);
    if (old !== undefined && old.kind !== table.kind) {
      throw new Error(`state "${table.name}" is declared as ${table.kind} state but already exists as ${old.kind} state; state names must be unique within an operator`);
    }
    if (old !== undefined && old !== table) table.load([...old.entries()]);
    this.byName.set(table.name, table);
  }

  tables(): readonly StateTable<unknown>[] {
    return [...this.byName.values()];
  }

  snapshot(maxParallelism = DEFAULT_MAX_PARALLELISM): TableSnapshot[] {
    const names = [...this.byName.keys()].sort();
    // An operator's tables mostly hold the same keys: sort one table's keys and reuse the order for
    // every table of that size that has them all (one sort per snapshot instead of one per table).
    let shared: Key[] | undefined;
    return names.map((name) => {
      const t = this.byName.get(name) as StateTable<unknown>;
      let entries = shared !== undefined && shared.length === t.size ? entriesInOrder(t, shared) : undefined;
      if (entries === undefined) {
        const keys = sortedByKeyGroup(t.keys(), maxParallelism);
        if (shared === undefined || keys.length > shared.length) shared = keys;
        entries = entriesInOrder(t, keys) as Array<[Key, unknown]>;
      }
      if (t.kind === "map") for (const e of entries) e[1] = [...(e[1] as Map<string, unknown>).entries()];
      return { name, kind: t.kind, entries };
    });
  }

  restore(tables: readonly TableSnapshot[], keep?: (key: Key) => boolean): void {
    this.byName.clear();
    for (const ts of tables) {
      const t = this.table<unknown>(ts.name, ts.kind) as HeapStateTable<unknown>;
      for (const [k, v] of ts.entries) {
        if (keep && !keep(k)) continue;
        t.map.set(k, ts.kind === "map" ? new Map(v as Array<[string, unknown]>) : v);
      }
    }
  }

  stats(): StateBackendStats {
    const keys = new Set<Key>();
    let stateEntries = 0;
    let stateBytes = 0;
    for (const t of this.byName.values()) {
      const n = t.size;
      if (n === 0) continue;
      const step = n > STATS_SAMPLE ? n / STATS_SAMPLE : 1;
      let next = 0;
      let i = 0;
      let sampledBytes = 0;
      let sampled = 0;
      const known = (t as AdoptedTable).estimatedBytes?.();
      if (known !== undefined && t.kind !== "map") {
        // An adopted table knows its bytes: only its keys are needed, not its values in stored form.
        for (const k of t.keys()) {
          keys.add(k);
          stateEntries++;
        }
        stateBytes += known;
        continue;
      }
      for (const [k, v] of t.entries()) {
        keys.add(k);
        stateEntries += t.kind === "map" ? (v as Map<string, unknown>).size : 1;
        if (known === undefined && i >= next) {
          sampledBytes += MAP_ENTRY_OVERHEAD + estimateBytes(k) + estimateBytes(v);
          sampled++;
          next += step;
        }
        i++;
      }
      stateBytes += known ?? Math.round((sampledBytes / sampled) * n);
    }
    return { keys: keys.size, stateEntries, stateBytes };
  }
}
