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

/**
 * A table as an operator snapshot's bytes hold it (core/host.ts): keys in (key group, key) order
 * and each key's stored value at the same position, map-kind values flattened to
 * [mapKey, value, mapKey, value, …]; `keys` null when they are those of the nearest earlier table
 * that lists keys. Leaner than TableSnapshot's pairs: no array per entry and per map, and an
 * operator's tables over the same keys write them once (the key strings were half the bytes).
 */
export interface ColumnarTableSnapshot {
  name: string;
  kind: StateKind;
  keys: Key[] | null;
  values: unknown[];
}

/**
 * The tables of an operator snapshot as TableSnapshot, whichever form its bytes hold: columnar,
 * or the [key, value] pairs of snapshots written before the columnar form.
 */
export function tablesFromSnapshot(state: ReadonlyArray<TableSnapshot | ColumnarTableSnapshot>): TableSnapshot[] {
  let keys: readonly Key[] = [];
  return state.map((t) => {
    if (!("values" in t)) return t;
    if (t.keys !== null) keys = t.keys;
    if (keys.length !== t.values.length) throw new Error(`state "${t.name}": the snapshot lists ${keys.length} keys for ${t.values.length} values`);
    const entries: Array<[Key, unknown]> = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const v = t.values[i];
      entries[i] = [keys[i] as Key, t.kind === "map" ? pairsOf(v as unknown[]) : v];
    }
    return { name: t.name, kind: t.kind, entries };
  });
}

/**
 * TableSnapshot → the columnar form, as snapshotColumns gives it (for a backend without that
 * member): every backend's snapshot of the same state is then the same bytes.
 */
export function columnsOf(tables: readonly TableSnapshot[]): ColumnarTableSnapshot[] {
  let previous: Key[] | undefined;
  return tables.map((t) => {
    const keys = t.entries.map((e) => e[0]);
    const values = t.entries.map((e) => (t.kind === "map" ? (e[1] as Array<[string, unknown]>).flat() : e[1]));
    const same = previous !== undefined && sameKeys(previous, keys);
    if (!same) previous = keys;
    return { name: t.name, kind: t.kind, keys: same ? null : keys, values };
  });
}

function pairsOf(flat: readonly unknown[]): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = new Array(flat.length >> 1);
  for (let i = 0; i < flat.length; i += 2) out[i >> 1] = [flat[i] as string, flat[i + 1]];
  return out;
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
  /** Optional: snapshot() in the columnar form, built without a pair per entry (what the host encodes when present). */
  snapshotColumns?(maxParallelism?: number): ColumnarTableSnapshot[];
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
  /** The columns of the last snapshot, kept for the next one (see SnapshotColumns); undefined until the first. */
  private columns: SnapshotColumns | undefined;
  constructor(
    readonly name: string,
    readonly kind: StateKind,
  ) {}
  get(key: Key): V | undefined {
    return this.map.get(key);
  }
  put(key: Key, value: V): void {
    this.map.set(key, value);
    if (this.columns !== undefined) this.columns.touched(key, this.map.size);
  }
  delete(key: Key): void {
    if (this.map.delete(key) && this.columns !== undefined) this.columns.touched(key, this.map.size);
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
  /** Keys in (key group, key) order and their stored values (maps not flattened). */
  snapshotColumns(maxParallelism: number): { keys: Key[]; values: unknown[] } {
    if (this.columns === undefined || this.columns.maxParallelism !== maxParallelism || this.columns.stale) {
      this.columns = new SnapshotColumns(this.map, maxParallelism);
    } else {
      this.columns.update(this.map);
    }
    return this.columns.concat();
  }
}

/**
 * A table's keys in snapshot order and their stored values, per key group, kept from one snapshot
 * to the next. The table reports every key it writes or deletes; the next snapshot merges only
 * those into their key groups' sorted columns and takes every other value from the columns as they
 * are. Stored objects changed in place (a TTL entry restamped, a list pushed to) are the same
 * objects, read when the snapshot is encoded. Without this, each checkpoint sorted every key again
 * and looked every value up in key order: random accesses into a large Map, most of a 10 MB
 * snapshot's time once the sort was gone. Reported keys are bounded by the table's size: past it
 * the columns are dropped and rebuilt at the next snapshot, so a job that stops checkpointing does
 * not accumulate them.
 */
class SnapshotColumns<V = unknown> {
  private readonly groupKeys: Key[][] = [];
  private readonly groupValues: V[][] = [];
  private readonly reported: Key[] = [];
  stale = false;

  constructor(
    map: ReadonlyMap<Key, V>,
    readonly maxParallelism: number,
  ) {
    for (const k of map.keys()) (this.groupKeys[keyGroupOf(k, maxParallelism)] ??= []).push(k);
    this.groupKeys.forEach((keys, g) => {
      if (keys.length > 1) keys.sort();
      this.groupValues[g] = keys.map((k) => map.get(k) as V);
    });
  }

  touched(key: Key, size: number): void {
    if (this.stale) return;
    this.reported.push(key);
    if (this.reported.length > size + 1024) {
      this.stale = true;
      this.reported.length = 0;
    }
  }

  /**
   * Brings the reported keys' current state into their groups: a key still present where it was
   * gets its value replaced in place (binary search in its group); a group that gained or lost
   * keys is merged again.
   */
  update(map: ReadonlyMap<Key, V>): void {
    if (this.reported.length === 0) return;
    const structural: Key[][] = [];
    const seen = new Set<Key>();
    for (const k of this.reported) {
      if (seen.has(k)) continue;
      seen.add(k);
      const g = keyGroupOf(k, this.maxParallelism);
      const v = map.get(k);
      const at = indexOf(this.groupKeys[g], k);
      if (at >= 0 && v !== undefined) (this.groupValues[g] as V[])[at] = v;
      else if (at >= 0 || v !== undefined) (structural[g] ??= []).push(k);
    }
    this.reported.length = 0;
    structural.forEach((changed, g) => {
      changed.sort();
      const oldKeys = this.groupKeys[g] ?? [];
      const oldValues = this.groupValues[g] ?? [];
      const keys: Key[] = [];
      const values: V[] = [];
      let i = 0;
      for (const k of changed) {
        while (i < oldKeys.length && (oldKeys[i] as Key) < k) {
          keys.push(oldKeys[i] as Key);
          values.push(oldValues[i] as V);
          i++;
        }
        if (i < oldKeys.length && oldKeys[i] === k) i++;
        const v = map.get(k);
        if (v === undefined) continue;
        keys.push(k);
        values.push(v);
      }
      for (; i < oldKeys.length; i++) {
        keys.push(oldKeys[i] as Key);
        values.push(oldValues[i] as V);
      }
      this.groupKeys[g] = keys;
      this.groupValues[g] = values;
    });
  }

  concat(): { keys: Key[]; values: unknown[] } {
    let n = 0;
    for (const ks of this.groupKeys) if (ks !== undefined) n += ks.length;
    const keys: Key[] = new Array(n);
    const values: unknown[] = new Array(n);
    let j = 0;
    for (let g = 0; g < this.groupKeys.length; g++) {
      const ks = this.groupKeys[g];
      if (ks === undefined) continue;
      const vs = this.groupValues[g] as V[];
      for (let i = 0; i < ks.length; i++, j++) {
        keys[j] = ks[i] as Key;
        values[j] = vs[i];
      }
    }
    return { keys, values };
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

/** The position of `key` in the sorted `keys`, or -1. */
function indexOf(keys: readonly Key[] | undefined, key: Key): number {
  if (keys === undefined) return -1;
  let lo = 0;
  let hi = keys.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const k = keys[mid] as Key;
    if (k === key) return mid;
    if (k < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

function sameKeys(a: readonly Key[], b: readonly Key[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A map state's entries as [mapKey, value, mapKey, value, …], in insertion order. */
function flatten(m: Map<string, unknown>): unknown[] {
  const out: unknown[] = new Array(m.size * 2);
  let i = 0;
  for (const [k, v] of m) {
    out[i++] = k;
    out[i++] = v;
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
    return tablesFromSnapshot(this.snapshotColumns(maxParallelism));
  }

  snapshotColumns(maxParallelism = DEFAULT_MAX_PARALLELISM): ColumnarTableSnapshot[] {
    const names = [...this.byName.keys()].sort();
    // An operator's tables mostly hold the same keys: a table over exactly the previous table's
    // keys does not list them again.
    let previous: Key[] | undefined;
    return names.map((name) => {
      const t = this.byName.get(name) as StateTable<unknown>;
      let keys: Key[];
      let values: unknown[];
      if (t instanceof HeapStateTable) ({ keys, values } = t.snapshotColumns(maxParallelism));
      else {
        keys = sortedByKeyGroup(t.keys(), maxParallelism);
        values = keys.map((k) => t.get(k));
      }
      if (t.kind === "map") for (let i = 0; i < values.length; i++) values[i] = flatten(values[i] as Map<string, unknown>);
      const same = previous !== undefined && sameKeys(previous, keys);
      if (!same) previous = keys;
      return { name, kind: t.kind, keys: same ? null : keys, values };
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
