// The keyed state backend: where an operator's keyed state lives, one table per state name.
// The heap implementation keeps JS Maps; the runner may plug an on-disk backend behind the same
// synchronous interface (Flink's HashMapStateBackend versus EmbeddedRocksDBStateBackend).
import type { Key } from "../api";
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from "../keys";
import { bytesEqual, packValueView, packValues, unpackValues } from "../snapshot-codec";
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
  /**
   * The object stored under `key` was changed in place, without a put (what handles do on a
   * by-reference table instead of writing the same object back): the next snapshot must pack it
   * again. Only by-reference tables have it.
   */
  changedInPlace?(key: Key): void;
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
 * A table in columnar form: keys in (key group, key) order and each key's stored value at the same
 * position, map-kind values flattened to [mapKey, value, mapKey, value, …]; `keys` null when they
 * are those of the nearest earlier table that lists keys. The heap backend writes it for tables
 * kept in their operator's own layout (adoptTable), whose stored values are built afresh at every
 * snapshot anyway: packed with the rest of the snapshot (records, core/snapshot-codec.ts), they
 * cost less time and fewer bytes than packed one by one. Other tables are packed (PackedTableSnapshot).
 */
export interface ColumnarTableSnapshot {
  name: string;
  kind: StateKind;
  keys: Key[] | null;
  values: unknown[];
}

/**
 * A table as an operator snapshot's bytes hold it (core/host.ts), one chunk per key group that
 * has keys (one chunk in all when a changelog's chain was replayed on its bytes, runtime/changelog.ts;
 * readers only concatenate them): `packedKeys` the group's keys in order and `packed` each key's stored value at the same
 * position, packed one by one (snapshot-codec.ts packValues), map-kind values flattened to
 * [mapKey, value, mapKey, value, …]; `packedKeys` null when the keys are those of the nearest
 * earlier table that lists keys. No array per entry and per map, an operator's tables over the
 * same keys write them once (the key strings were half the bytes), and a value's bytes do not
 * depend on the others: a heap table packs again only what changed since its last snapshot, and
 * a group's keys only when it gained or lost one.
 */
export interface PackedTableSnapshot {
  name: string;
  kind: StateKind;
  packedKeys: Uint8Array[] | null;
  packed: Uint8Array[];
}

/**
 * A table in a changelog checkpoint's snapshot (see KeyedStateBackend.snapshotChangelog): the
 * table's changes since the checkpoint before, as a log in the order they were packed. Entry i is
 * key i of `changedKeys` and `ops[i]`: 1, it holds the next value of `changed` (the key's whole
 * stored value, packed as in PackedTableSnapshot), or 0, the key was deleted. A key may come more
 * than once; its last entry is its state. It means nothing alone: a restore applies it over the
 * same table of the snapshots before it (runtime/changelog.ts).
 */
export interface DeltaTableSnapshot {
  name: string;
  kind: StateKind;
  changedKeys: Uint8Array;
  ops: Uint8Array;
  changed: Uint8Array;
}

/** A changelog checkpoint's snapshot: the whole state (the start of a chain), or the changes since the last one. */
export type ChangelogSnapshot = "whole" | "changes";

/** A table of a changelog checkpoint: its changes, or the whole table when it cannot list them. */
export type ChangelogTableSnapshot = PackedTableSnapshot | ColumnarTableSnapshot | DeltaTableSnapshot;

/** A table's changes for a changelog snapshot, before they are encoded (see DeltaTableSnapshot). */
export interface TableChanges {
  changedKeys: Key[];
  ops: Uint8Array;
  changed: Uint8Array;
}

/**
 * The changes a table's kept columns pack, in order, from one changelog snapshot to the next: each
 * value is copied here as it is packed into its group (by a materialization ahead of the barrier,
 * or any snapshot), so that a changelog checkpoint writes them without looking any key up again.
 */
class ChangeLog {
  readonly keys: Key[] = [];
  private ops: Uint8Array;
  private bytes: Uint8Array;
  private size = 0;

  /** Sized as the last log was, so that a steady job does not grow each log by doubling. */
  constructor(like?: ChangeLog) {
    this.ops = new Uint8Array(Math.max(1024, like?.keys.length ?? 0));
    this.bytes = new Uint8Array(Math.max(64 * 1024, like?.size ?? 0));
  }

  get entries(): number {
    return this.keys.length;
  }

  /** The key's new packed value, or undefined: deleted. */
  append(key: Key, value: Uint8Array | undefined): void {
    const n = this.keys.length;
    if (n === this.ops.length) {
      const ops = new Uint8Array(n * 2);
      ops.set(this.ops);
      this.ops = ops;
    }
    this.keys.push(key);
    if (value === undefined) return; // ops[n] stays 0
    this.ops[n] = 1;
    if (this.size + value.byteLength > this.bytes.byteLength) {
      const bytes = new Uint8Array(Math.max(this.bytes.byteLength * 2, this.size + value.byteLength));
      bytes.set(this.bytes.subarray(0, this.size));
      this.bytes = bytes;
    }
    this.bytes.set(value, this.size);
    this.size += value.byteLength;
  }

  /** The log's changes (views of its arrays: a log is not appended to once taken). */
  changes(): TableChanges {
    return { changedKeys: this.keys, ops: this.ops.subarray(0, this.keys.length), changed: this.bytes.subarray(0, this.size) };
  }
}

/**
 * The tables of an operator snapshot as TableSnapshot, whichever form its bytes hold: packed,
 * columnar, or the [key, value] pairs of the oldest snapshots.
 */
export function tablesFromSnapshot(state: ReadonlyArray<TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot | DeltaTableSnapshot>): TableSnapshot[] {
  let keys: readonly Key[] = [];
  return state.map((t) => {
    if ("entries" in t) return t;
    if ("ops" in t) throw new Error(`state "${t.name}": the snapshot holds only its changes since an earlier checkpoint (a changelog checkpoint's); it is restored only over that checkpoint's state (resolveChangelog)`);
    let values: unknown[];
    if ("packed" in t) {
      if (t.packedKeys !== null) keys = unpackChunks(t.packedKeys) as Key[];
      values = unpackChunks(t.packed);
    } else {
      if (t.keys !== null) keys = t.keys;
      values = t.values;
    }
    if (keys.length !== values.length) throw new Error(`state "${t.name}": the snapshot lists ${keys.length} keys for ${values.length} values`);
    const entries: Array<[Key, unknown]> = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const v = values[i];
      entries[i] = [keys[i] as Key, t.kind === "map" ? pairsOf(v as unknown[]) : v];
    }
    return { name: t.name, kind: t.kind, entries };
  });
}

function unpackChunks(chunks: readonly Uint8Array[]): unknown[] {
  if (chunks.length === 1) return unpackValues(chunks[0] as Uint8Array);
  const out: unknown[] = [];
  for (const c of chunks) for (const v of unpackValues(c)) out.push(v);
  return out;
}

/**
 * TableSnapshot (entries in (key group, key) order) → the packed form, chunked by key group as
 * the heap backend's snapshotColumns packs it (for a backend without that member).
 */
export function columnsOf(tables: readonly TableSnapshot[], maxParallelism = DEFAULT_MAX_PARALLELISM): PackedTableSnapshot[] {
  let previous: Key[] | undefined;
  return tables.map((t) => {
    const keys = t.entries.map((e) => e[0]);
    const values = t.entries.map((e) => (t.kind === "map" ? (e[1] as Array<[string, unknown]>).flat() : e[1]));
    const same = previous !== undefined && sameKeys(previous, keys);
    if (!same) previous = keys;
    const packedKeys: Uint8Array[] = [];
    const packed: Uint8Array[] = [];
    for (let from = 0; from < keys.length; ) {
      const g = keyGroupOf(keys[from] as Key, maxParallelism);
      let to = from + 1;
      while (to < keys.length && keyGroupOf(keys[to] as Key, maxParallelism) === g) to++;
      if (!same) packedKeys.push(packValues(keys.slice(from, to)));
      packed.push(packValues(values.slice(from, to)));
      from = to;
    }
    return { name: t.name, kind: t.kind, packedKeys: same ? null : packedKeys, packed };
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
  /** Optional: snapshot() in the packed or columnar form, built without a pair per entry (what the host encodes when present). */
  snapshotColumns?(maxParallelism?: number, hold?: SnapshotHold): Array<PackedTableSnapshot | ColumnarTableSnapshot>;
  /**
   * Optional, heap backends: a changelog checkpoint's tables (Flink's changelog state backend, on
   * the heap). With `delta` false, every table whole, and each table that reports its changes
   * starts recording them; with `delta` true, such tables give only what changed since the last
   * changelog snapshot (DeltaTableSnapshot) and the others their whole state. Either way the
   * recorded changes start again from here. Other snapshots leave the record alone.
   */
  snapshotChangelog?(maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): Array<ChangelogTableSnapshot | { name: string; kind: StateKind; changes: TableChanges }>;
  /**
   * Optional, heap backends: packs now what changed since the last snapshot, so that the next one
   * has less to pack (Flink's changelog backend materializes state in the background for the same
   * reason). The runner calls it while the job waits for input; it changes no snapshot's content.
   * With a budget it packs at most `budget.values` values and takes them off it, so that the runner
   * can look at its input between slices; it returns whether nothing is left to pack.
   */
  materialize?(maxParallelism?: number, budget?: MaterializeBudget): boolean;
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
  /** The event-time timers the table leaves implied in its state (OperatorSpec.impliedTimers): counted with the queued ones. */
  impliedTimerCount?(): number;
  /**
   * A table that reports every change of a key's stored value keeps its packed columns between
   * snapshots as the heap's own tables do (see KeptColumns): the backend then snapshots it in the
   * packed form through these, and otherwise rebuilds its columns whole at every snapshot.
   */
  snapshotColumns?(maxParallelism: number, hold?: SnapshotHold): PackedColumns;
  materialize?(maxParallelism: number, budget?: MaterializeBudget): boolean;
  /** The table's part of a changelog snapshot (see KeptColumns.changelog); with snapshotColumns. */
  snapshotChangelog?(maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): PackedColumns | TableChanges;
}

/**
 * What keeps a snapshot's packed columns from being written over. The kept columns of a key group
 * are rewritten into a spare buffer at each change (the one the group held before), so that a
 * checkpoint does not allocate the whole state anew: every 64 MB of new ArrayBuffers makes V8 mark
 * the whole heap ("external memory pressure"), 30 to 40 ms inside a checkpoint of 24 MB of velocity
 * windows. A buffer is reused only once every snapshot that handed it out is released: the runner
 * releases a checkpoint's pieces once they are written; a snapshot taken without a hold keeps its
 * buffers for good (they are then never reused, as before).
 */
export class SnapshotHold {
  private isReleased = false;
  get released(): boolean {
    return this.isReleased;
  }
  /** The snapshot's pieces are no longer read: their buffers may be written again. */
  release(): void {
    this.isReleased = true;
  }
}

/** Holds the buffers of snapshots taken without one: never released. */
const HELD_FOR_GOOD = new SnapshotHold();

/**
 * How many values a materialization may still pack (KeyedStateBackend.materialize), shared by
 * every table it visits and counted down by each.
 */
export interface MaterializeBudget {
  values: number;
}

class HeapStateTable<V> implements StateTable<V> {
  readonly map = new Map<Key, V>();
  readonly storesByReference = true;
  private readonly kept: KeptColumns;
  constructor(
    readonly name: string,
    readonly kind: StateKind,
  ) {
    this.kept = new KeptColumns(name, kind);
  }
  get(key: Key): V | undefined {
    // Whoever reads a stored object may change it in place (the by-reference handles and window
    // operators do, without writing it back): a read counts as a change for the next snapshot.
    this.kept.touched(key, this.map.size);
    return this.map.get(key);
  }
  put(key: Key, value: V): void {
    this.map.set(key, value);
    this.kept.touched(key, this.map.size);
  }
  changedInPlace(key: Key): void {
    this.kept.touched(key, this.map.size);
  }
  delete(key: Key): void {
    if (this.map.delete(key)) this.kept.touched(key, this.map.size);
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
  /** Packs the values changed since the last snapshot into its kept columns (see KeyedStateBackend.materialize). */
  materialize(maxParallelism: number, budget?: MaterializeBudget): boolean {
    return this.kept.materialize(this.map, maxParallelism, budget);
  }
  /** Keys in (key group, key) order and their values, packed by key group (see PackedTableSnapshot). */
  snapshotColumns(maxParallelism: number, hold?: SnapshotHold): PackedColumns {
    return this.kept.snapshot(this.map, maxParallelism, hold);
  }
  snapshotChangelog(maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): PackedColumns | TableChanges {
    return this.kept.changelog(this.map, maxParallelism, hold, delta);
  }
}

/** A table whose packed columns are kept between snapshots: the heap's own, or an adopted one that reports its changes. */
function keepsColumns(t: StateTable<unknown>): KeepsColumns | undefined {
  if (t instanceof HeapStateTable) return t;
  const adopted = t as AdoptedTable;
  return adopted.snapshotColumns !== undefined ? (adopted as KeepsColumns) : undefined;
}

type KeepsColumns = Required<Pick<AdoptedTable, "snapshotColumns">> & Pick<AdoptedTable, "materialize" | "snapshotChangelog">;

/** What SnapshotColumns reads of a table: its keys, and each key's value in stored form. */
export interface StoredValues {
  get(key: Key): unknown;
  keys(): Iterable<Key>;
  /**
   * The key's stored value already packed (what packValueView gives for it; a view, copied at
   * once), for tables that keep values in columns and can write their bytes without building the
   * object (see ValueWriter); undefined when it cannot (or the key holds none): get()'s value is
   * packed then. Not for map state.
   */
  packedValue?(key: Key): Uint8Array | undefined;
}

/**
 * A table's packed snapshot columns kept from one snapshot to the next (SnapshotColumns), for the
 * heap's tables and for adopted tables that report their changes. Until the first snapshot no
 * change is recorded, so a table never snapshotted pays nothing on its reads and writes.
 */
export class KeptColumns {
  private columns: SnapshotColumns | undefined;
  constructor(
    private readonly name: string,
    private readonly kind: StateKind,
  ) {}

  /** The key's stored value may have changed; `size` is the table's (too many changes and the columns are rebuilt instead). */
  touched(key: Key, size: number): void {
    if (this.columns !== undefined) this.columns.touched(key, size);
  }

  /**
   * The table's part of a changelog snapshot (KeyedStateBackend.snapshotChangelog). With `delta`,
   * and a log kept since the last one: the log, with the keys changed since they were last logged
   * packed now and added. Otherwise the whole table (snapshot()). A new log starts either way.
   *
   * Once a table keeps a log, its materialization passes only log (SnapshotColumns.logChanges) and
   * its key groups fall behind: a changelog job's whole state is the chain resolved (the runner
   * does that off its event loop), not its groups. Keeping the groups up to date as well copied every
   * touched group at every pass, a tenth of a 20 k records/s job's time, and 16-28 ms before
   * each barrier; only a whole snapshot, which then packs every key, still needs them.
   */
  changelog(values: StoredValues, maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): PackedColumns | TableChanges {
    const columns = this.current(maxParallelism);
    const log = columns?.takeLog();
    if (!delta || columns === undefined || log === undefined) {
      const whole = this.snapshot(values, maxParallelism, hold);
      const built = this.usable(maxParallelism) as SnapshotColumns;
      built.takeLog();
      built.startLog();
      return whole;
    }
    columns.resumeLog(log);
    columns.logChanges(values);
    columns.startLog(log);
    return log.changes();
  }

  /**
   * Packs the values changed since the last snapshot now, or `budget.values` of them (see
   * KeyedStateBackend.materialize). A table without usable columns (never snapshotted, or stale)
   * gets them here, every key reported, and built a slice at a time: otherwise the first checkpoint
   * after a start or a restore would pack the whole state with the records stopped.
   */
  materialize(values: StoredValues, maxParallelism: number, budget?: MaterializeBudget): boolean {
    let columns = this.current(maxParallelism);
    if (columns?.logging) return columns.logChanges(values, budget);
    if (columns === undefined || columns.groupsBehind) this.columns = columns = SnapshotColumns.pending(values, maxParallelism, this.kind);
    return columns.update(values, budget);
  }

  /** Keys in (key group, key) order and their values, packed by key group (see PackedTableSnapshot). */
  snapshot(values: StoredValues, maxParallelism: number, hold: SnapshotHold = HELD_FOR_GOOD): PackedColumns {
    let columns = this.usable(maxParallelism);
    if (columns === undefined) {
      // Columns whose groups fell behind a log (see changelog()) are built again, and the log goes on.
      const behind = this.current(maxParallelism);
      if (behind?.logging) behind.logChanges(values);
      const log = behind?.takeLog();
      this.columns = columns = SnapshotColumns.built(values, maxParallelism, this.kind);
      if (log !== undefined) columns.resumeLog(log);
    } else columns.update(values);
    const out = columns.concat(hold);
    if (verifyKeptColumns) {
      const at = firstDifference(out, SnapshotColumns.built(values, maxParallelism, this.kind).concat(HELD_FOR_GOOD));
      if (at !== undefined) throw new Error(`state "${this.name}": the kept snapshot columns differ from the state at key ${JSON.stringify(at)} (a stored object changed in place without being read, written or reported since the last snapshot)`);
    }
    return out;
  }

  /** The kept columns, unless there are none for this maxParallelism or they went stale. */
  private current(maxParallelism: number): SnapshotColumns | undefined {
    const columns = this.columns;
    return columns !== undefined && columns.maxParallelism === maxParallelism && !columns.stale ? columns : undefined;
  }

  /** current() when its groups hold the state (then a snapshot packs only what changed); else undefined, and they are built afresh. */
  private usable(maxParallelism: number): SnapshotColumns | undefined {
    const columns = this.current(maxParallelism);
    return columns !== undefined && !columns.groupsBehind ? columns : undefined;
  }
}

/** Tests: every heap snapshot checks its kept columns against columns built afresh (see setKeptColumnsVerification). */
let verifyKeptColumns = false;

/**
 * Turns on (tests) the check that a heap table's kept snapshot columns equal the state itself: a
 * stored object changed in place without being read (get), written or reported (changedInPlace)
 * since the last snapshot, say through a reference kept across checkpoints, would otherwise leave
 * a stale value in every later checkpoint. The unit tests run with it on.
 */
export function setKeptColumnsVerification(on: boolean): void {
  verifyKeptColumns = on;
}

/** Whether the check is on (a runner passes it on to its worker threads, whose modules start with it off). */
export function keptColumnsVerification(): boolean {
  return verifyKeptColumns;
}

/** The first key whose entry differs between two packed column sets, or undefined when they are equal. */
function firstDifference(a: PackedColumns, b: PackedColumns): string | undefined {
  if (a.keys.length !== b.keys.length) return `(${a.keys.length} keys kept, ${b.keys.length} in the state)`;
  for (let i = 0; i < a.keys.length; i++) if (a.keys[i] !== b.keys[i]) return a.keys[i];
  if (a.packed.length === b.packed.length && a.packed.every((x, i) => bytesEqual(x, b.packed[i] as Uint8Array)) && a.packedKeys.every((x, i) => bytesEqual(x, b.packedKeys[i] as Uint8Array))) return undefined;
  const va = unpackChunks(a.packed);
  const vb = unpackChunks(b.packed);
  for (let i = 0; i < a.keys.length; i++) if (JSON.stringify(va[i]) !== JSON.stringify(vb[i])) return a.keys[i];
  return "(same values, other bytes)";
}

const NO_KEYS: Key[] = [];
const NO_BYTES = new Uint8Array(0);
const NO_OFFSETS = new Int32Array(1);

/** One key group's part of a packed column: its keys, their packed form, the packed values and where each starts. */
interface PackedGroup {
  keys: Key[];
  packedKeys: Uint8Array;
  /** A view of the start of `buffer`. */
  bytes: Uint8Array;
  /** Where each value's bytes start, then their end (keys.length + 1 entries). */
  offsets: Int32Array;
  /** The allocation `bytes` lives in (with room to grow), and the snapshots that handed it out (see SnapshotHold). */
  buffer: Uint8Array;
  holds: SnapshotHold[];
  /** A buffer no snapshot reads any more, for the group's next repack to write into. */
  spare: Uint8Array | undefined;
}

/** A table's snapshot as SnapshotColumns keeps it: the keys in order and the per-group chunks. */
export interface PackedColumns {
  /** Built when first read (the snapshot itself writes the packed keys; only a comparison of two tables reads these). */
  readonly keys: Key[];
  packedKeys: Uint8Array[];
  packed: Uint8Array[];
}

/**
 * A table's keys in snapshot order and their packed values, per key group, kept from one snapshot
 * to the next. The table reports every key it reads, writes, deletes or has changed in place; the
 * next snapshot packs only those values again and copies every other value's bytes as they are
 * (runs of unchanged neighbours in one copy), and packs a group's keys again only when it gained or
 * lost one. Packing every stored object at every checkpoint cost about 35 ms per MB of state, most
 * of it cache misses on objects scattered over the heap; after 1 % of the keys changed, a
 * checkpoint now reads those keys' objects and copies bytes. Reported keys are bounded by twice the
 * table's size: past it the columns are dropped and rebuilt at the next snapshot, so a job that
 * stops checkpointing does not accumulate them. (Twice: columns being built by materialization
 * start with every key reported, and must survive the table's own writes until they are built.)
 */
class SnapshotColumns {
  private readonly groups: PackedGroup[] = [];
  /** Keys reported since they were last packed: those from `reportedFrom` on (a slice leaves the rest). */
  private readonly reported: Key[] = [];
  private reportedFrom = 0;
  /** Reported keys before this index (from `reportedFrom` on) are distinct and in key-group order (see regroup). */
  private groupedTo = 0;
  private lastReported: Key | undefined = undefined;
  /** concat()'s last result, kept until a group changes (and its keys until one gains or loses a key). */
  private concatenated: PackedColumns | undefined;
  private concatenatedKeys: Key[] | undefined;
  /** The changes packed since the last changelog snapshot, once one was taken (see KeptColumns.changelog). */
  private log: ChangeLog | undefined;
  /** Whether keys were logged without being packed into their groups (logChanges): the groups no longer hold the state. */
  groupsBehind = false;
  stale = false;

  private constructor(
    readonly maxParallelism: number,
    private readonly kind: StateKind,
  ) {}

  /** Columns of every key in `map`, packed now. */
  static built(map: StoredValues, maxParallelism: number, kind: StateKind): SnapshotColumns {
    const columns = new SnapshotColumns(maxParallelism, kind);
    const byGroup: Key[][] = [];
    for (const k of map.keys()) (byGroup[keyGroupOf(k, maxParallelism)] ??= []).push(k);
    byGroup.forEach((keys, g) => {
      if (keys.length > 1) keys.sort();
      // Views of the packer's buffer, copied into the group's bytes by joined() at once.
      const pieces = keys.map((k) => columns.packed(map, k) ?? packValueView(undefined));
      const { bytes, offsets } = joined(pieces);
      columns.groups[g] = { keys, packedKeys: packValues(keys), bytes, offsets, buffer: bytes, holds: [], spare: undefined };
    });
    return columns;
  }

  /**
   * Empty columns with every key in `map` reported, for update() to pack in slices. The keys are
   * reported key group by key group, so that a slice fills one or two groups (a group is copied
   * whole each time a slice adds to it); update() sorts each slice's keys, so they are not sorted
   * here, where all of it happens at once (a hash per key).
   */
  static pending(map: StoredValues, maxParallelism: number, kind: StateKind): SnapshotColumns {
    const columns = new SnapshotColumns(maxParallelism, kind);
    const byGroup: Key[][] = [];
    for (const k of map.keys()) (byGroup[keyGroupOf(k, maxParallelism)] ??= []).push(k);
    for (const keys of byGroup) if (keys !== undefined) for (const k of keys) columns.reported.push(k);
    columns.groupedTo = columns.reported.length;
    return columns;
  }

  /** The key's value packed (a view of a packer's buffer), or undefined when it holds none. */
  private packed(map: StoredValues, key: Key): Uint8Array | undefined {
    return packedOf(map, key, this.kind);
  }

  /** Logs every value packed from now on, for the next changelog snapshot (`like`: the last log, for its size). */
  startLog(like?: ChangeLog): void {
    this.log = new ChangeLog(like);
  }

  /** Whether a log is kept: materialization then only logs (see KeptColumns.changelog). */
  get logging(): boolean {
    return this.log !== undefined;
  }

  /** Goes on with `log` (taken from these columns or from the ones they replace). */
  resumeLog(log: ChangeLog): void {
    this.log = log;
  }

  /**
   * Logs the values of the keys reported since they were last logged or packed, packed now, all of
   * them or the first `budget.values` distinct ones (the rest stay reported), without packing them
   * into their groups: a changelog checkpoint's barrier then packs only the keys changed since the
   * last such pass. Returns whether none is left. Needs a log (startLog or resumeLog).
   */
  logChanges(map: StoredValues, budget?: MaterializeBudget): boolean {
    const log = this.log;
    if (log === undefined) throw new Error("logChanges: no change log is kept");
    const reported = this.reported;
    if (reported.length === this.reportedFrom) return true;
    if (budget !== undefined && budget.values <= 0) return false;
    const logged = this.takeReported(budget?.values ?? Number.POSITIVE_INFINITY, (k) => log.append(k, this.packed(map, k)));
    if (budget !== undefined) budget.values -= logged;
    // A key logged now and changed again must be reported again, even straight after this.
    this.lastReported = undefined;
    this.groupsBehind = true;
    this.concatenated = undefined;
    return reported.length === this.reportedFrom;
  }

  /** Calls `each` on the first `limit` distinct keys reported and not yet done, marks them done, and returns how many. */
  private takeReported(limit: number, each: (key: Key) => void): number {
    const reported = this.reported;
    const seen = new Set<Key>();
    let taken = this.reportedFrom;
    while (taken < reported.length && seen.size < limit) {
      const k = reported[taken++] as Key;
      if (seen.has(k)) continue;
      seen.add(k);
      each(k);
    }
    if (taken === reported.length) {
      reported.length = 0;
      this.reportedFrom = 0;
      this.groupedTo = 0;
    } else if (taken > 4096 && taken > reported.length / 2) {
      // Drop the done head now and then rather than at every slice (a splice is linear).
      reported.splice(0, taken);
      this.reportedFrom = 0;
      this.groupedTo = Math.max(0, this.groupedTo - taken);
    } else this.reportedFrom = taken;
    return seen.size;
  }

  /** The log since startLog (undefined: none, or it outgrew the table and was dropped); logging stops. */
  takeLog(): ChangeLog | undefined {
    const log = this.log;
    this.log = undefined;
    return log;
  }

  touched(key: Key, size: number): void {
    if (this.stale || key === this.lastReported) return;
    this.lastReported = key;
    this.reported.push(key);
    // A log longer than the table would write more than the whole table: the next changelog snapshot writes that instead.
    if (this.log !== undefined && this.log.entries > 2 * size + 1024) this.log = undefined;
    if (this.reported.length - this.reportedFrom > 2 * size + 1024) {
      this.stale = true;
      this.reported.length = 0;
      this.reportedFrom = 0;
      this.groupedTo = 0;
    }
  }

  /**
   * Packs the reported keys' current values into their groups, merging in added and removed keys:
   * all of them, or the first `budget.values` distinct ones (the rest stay reported). Returns
   * whether none is left.
   */
  update(map: StoredValues, budget?: MaterializeBudget): boolean {
    const reported = this.reported;
    if (reported.length === this.reportedFrom) return true;
    if (budget !== undefined && budget.values <= 0) return false;
    const limit = budget?.values ?? Number.POSITIVE_INFINITY;
    if (budget !== undefined) this.regroup(limit);
    const changed: Key[][] = [];
    const packed = this.takeReported(limit, (k) => (changed[keyGroupOf(k, this.maxParallelism)] ??= []).push(k));
    if (budget !== undefined) budget.values -= packed;
    // A key packed now and changed again must be reported again, even straight after this.
    this.lastReported = undefined;
    this.concatenated = undefined;
    changed.forEach((keys, g) => this.repack(g, keys.sort(), map));
    return reported.length === this.reportedFrom;
  }

  /**
   * Puts the keys still to pack in key-group order, each once, when more than a slice's worth
   * arrived in report order since the last time. A slice of keys in report order touches a group
   * per key, and repack copies each touched group whole: 64 keys over 128 groups copied half the
   * state per slice. In group order a slice touches one or two groups, and a pass over everything
   * changed copies the state about once. Only when the unordered tail is at least as long as the
   * ordered part, so that the keys reported during a long pass are not bucketed over and over.
   */
  private regroup(sliceValues: number): void {
    const reported = this.reported;
    const from = Math.max(this.groupedTo, this.reportedFrom);
    const tail = reported.length - from;
    if (tail <= sliceValues || tail < from - this.reportedFrom) return;
    const buckets: Key[][] = [];
    const seen = new Set<Key>();
    for (let i = this.reportedFrom; i < reported.length; i++) {
      const k = reported[i] as Key;
      if (seen.has(k)) continue;
      seen.add(k);
      (buckets[keyGroupOf(k, this.maxParallelism)] ??= []).push(k);
    }
    let n = this.reportedFrom;
    for (const b of buckets) if (b !== undefined) for (const k of b) reported[n++] = k;
    reported.length = n;
    this.groupedTo = n;
  }

  /** One group again: the `changed` keys (sorted) packed anew or dropped, the runs between them copied. */
  private repack(g: number, changed: readonly Key[], map: StoredValues): void {
    const old = this.groups[g];
    const oldKeys = old?.keys ?? NO_KEYS;
    const oldBytes = old?.bytes ?? NO_BYTES;
    const oldOffsets = old?.offsets ?? NO_OFFSETS;
    // First the changed keys' places and new bytes, so that the group is written in one exact allocation.
    const at = new Int32Array(changed.length);
    const pieces: Array<Uint8Array | undefined> = new Array(changed.length);
    let structural = false;
    let size = oldBytes.byteLength;
    let count = oldKeys.length;
    for (let c = 0; c < changed.length; c++) {
      const k = changed[c] as Key;
      const i = indexOf(oldKeys, k);
      at[c] = i;
      // A view of the packer's buffer, copied into the group's bytes below (and into the log).
      const p = this.packed(map, k);
      if (this.log !== undefined) this.log.append(k, p);
      if (i >= 0) {
        size -= (oldOffsets[i + 1] as number) - (oldOffsets[i] as number);
        count--;
      }
      if (p !== undefined) {
        pieces[c] = p;
        size += p.byteLength;
        count++;
      }
      if (i >= 0 !== (p !== undefined)) structural = true;
    }
    const keys: Key[] | undefined = structural ? new Array<Key>(count) : undefined;
    // Into the spare buffer when it is free and large enough; a new one has an eighth to spare, as state grows.
    const spare = old?.spare;
    const buffer = spare !== undefined && spare.byteLength >= size ? spare : new Uint8Array(size + (size >> 3));
    const bytes = buffer.subarray(0, size);
    const offsets = new Int32Array(count + 1);
    let n = 0;
    let pos = 0;
    let i = 0;
    const copyRun = (end: number): void => {
      if (end <= i) return;
      const from = oldOffsets[i] as number;
      bytes.set(oldBytes.subarray(from, oldOffsets[end]), pos);
      const shift = pos - from;
      for (let j = i; j < end; j++) {
        if (keys !== undefined) keys[n] = oldKeys[j] as Key;
        offsets[++n] = (oldOffsets[j + 1] as number) + shift;
      }
      pos = offsets[n] as number;
    };
    for (let c = 0; c < changed.length; c++) {
      const k = changed[c] as Key;
      const found = at[c] as number;
      // Old keys before k (an absent k's place is where the search stopped: the next greater key).
      let end = i;
      if (found >= 0) end = found;
      else while (end < oldKeys.length && (oldKeys[end] as Key) < k) end++;
      copyRun(end);
      i = found >= 0 ? found + 1 : end;
      const p = pieces[c];
      if (p === undefined) continue;
      bytes.set(p, pos);
      pos += p.byteLength;
      if (keys !== undefined) keys[n] = k;
      offsets[++n] = pos;
    }
    copyRun(oldKeys.length);
    if (keys !== undefined) this.concatenatedKeys = undefined;
    const groupKeys = keys ?? oldKeys;
    const packedKeys = old === undefined ? packValues(groupKeys) : keys !== undefined ? splicedKeys(oldKeys, old.packedKeys, keys) : old.packedKeys;
    // The old buffer is the next spare unless a snapshot still reads it (then a too-small spare stays).
    const oldFree = old !== undefined && old.holds.every((h) => h.released);
    this.groups[g] = { keys: groupKeys, packedKeys, bytes, offsets, buffer, holds: [], spare: oldFree ? old.buffer : buffer === spare ? undefined : spare };
  }

  /** Whatever a snapshot references of the groups' buffers stays as it is until `hold` is released. */
  private holdGroups(hold: SnapshotHold): void {
    for (const group of this.groups) {
      if (group === undefined) continue;
      const holds = group.holds;
      if (holds[holds.length - 1] === hold) continue;
      // Released holds go, so that a group unchanged over many checkpoints does not gather them.
      let n = 0;
      for (const h of holds) if (!h.released) holds[n++] = h;
      holds.length = n;
      holds.push(hold);
    }
  }

  /** The columns for a snapshot, whose pieces keep their groups' buffers until `hold` is released. */
  concat(hold: SnapshotHold): PackedColumns {
    this.holdGroups(hold);
    if (this.concatenated !== undefined) return this.concatenated;
    const packedKeys: Uint8Array[] = [];
    const packed: Uint8Array[] = [];
    // The groups' key lists as they are now (repack replaces a group's list, never changes it).
    const groupKeys: Key[][] = [];
    let n = 0;
    for (const group of this.groups) {
      if (group === undefined || group.keys.length === 0) continue;
      packedKeys.push(group.packedKeys);
      packed.push(group.bytes);
      groupKeys.push(group.keys);
      n += group.keys.length;
    }
    // Every key in one list: a copy of the whole table's keys (after any key came or went), so only when read.
    let keys = this.concatenatedKeys;
    const allKeys = (): Key[] => {
      if (keys === undefined) {
        keys = new Array<Key>(n);
        let j = 0;
        for (const list of groupKeys) for (const k of list) keys[j++] = k;
        if (this.concatenated === columns) this.concatenatedKeys = keys;
      }
      return keys;
    };
    const columns: PackedColumns = {
      get keys() {
        return allKeys();
      },
      packedKeys,
      packed,
    };
    this.concatenated = columns;
    return columns;
  }
}

/**
 * packValues(keys) for a group whose keys were `oldKeys`, packed as `oldPacked`: the bytes of the
 * keys it kept copied in runs, only the new ones packed. Packing every key of each group that
 * gained or lost one made a checkpoint cost the whole state's keys once a few new keys arrived in
 * every group (at 1 M keys, 100 new ones took a snapshot from 65 to 250 ms).
 */
function splicedKeys(oldKeys: readonly Key[], oldPacked: Uint8Array, keys: readonly Key[]): Uint8Array {
  const parts: Uint8Array[] = [];
  let size = 0;
  let runStart = 0;
  let pos = 0;
  let i = 0;
  const endRun = (): void => {
    if (pos > runStart) {
      parts.push(oldPacked.subarray(runStart, pos));
      size += pos - runStart;
    }
  };
  for (let j = 0; j < keys.length; j++) {
    const k = keys[j] as Key;
    // Old keys not kept (both lists are sorted): their bytes end the run.
    while (i < oldKeys.length && oldKeys[i] !== k && (oldKeys[i] as Key) < k) {
      endRun();
      pos += packedStrLength(oldPacked, pos);
      runStart = pos;
      i++;
    }
    if (i < oldKeys.length && oldKeys[i] === k) {
      pos += packedStrLength(oldPacked, pos);
      i++;
      continue;
    }
    endRun();
    runStart = pos;
    // A view of the packer's buffer (never written over), copied into the result below, as repack's values.
    const packed = packValueView(k);
    parts.push(packed);
    size += packed.byteLength;
  }
  endRun();
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** The length of the MessagePack string at `pos` (its header and bytes). */
function packedStrLength(bytes: Uint8Array, pos: number): number {
  const h = bytes[pos] as number;
  if ((h & 0xe0) === 0xa0) return 1 + (h & 0x1f);
  if (h === 0xd9) return 2 + (bytes[pos + 1] as number);
  if (h === 0xda) return 3 + (((bytes[pos + 1] as number) << 8) | (bytes[pos + 2] as number));
  if (h === 0xdb) return 5 + (((bytes[pos + 1] as number) << 24) >>> 0) + (((bytes[pos + 2] as number) << 16) | ((bytes[pos + 3] as number) << 8) | (bytes[pos + 4] as number));
  throw new Error(`a packed key group holds a value that is not a string (MessagePack type 0x${h.toString(16)} at byte ${pos})`);
}

/** Packed values joined into one group: the bytes and where each value starts. */
function joined(pieces: readonly Uint8Array[]): { bytes: Uint8Array; offsets: Int32Array } {
  let size = 0;
  for (const p of pieces) size += p.byteLength;
  const bytes = new Uint8Array(size);
  const offsets = new Int32Array(pieces.length + 1);
  let pos = 0;
  pieces.forEach((p, i) => {
    bytes.set(p, pos);
    pos += p.byteLength;
    offsets[i + 1] = pos;
  });
  return { bytes, offsets };
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

/** The key's stored value packed (a view of a packer's buffer), or undefined when the table holds none. */
function packedOf(map: StoredValues, key: Key, kind: StateKind): Uint8Array | undefined {
  const packed = map.packedValue?.(key);
  if (packed !== undefined) return packed;
  const v = map.get(key);
  if (v === undefined) return undefined;
  return packValueView(kind === "map" ? flatten(v as Map<string, unknown>) : v);
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

  materialize(maxParallelism = DEFAULT_MAX_PARALLELISM, budget?: MaterializeBudget): boolean {
    let done = true;
    for (const t of this.byName.values()) {
      const kept = keepsColumns(t);
      if (kept?.materialize !== undefined && !kept.materialize(maxParallelism, budget)) done = false;
    }
    return done;
  }

  snapshotColumns(maxParallelism = DEFAULT_MAX_PARALLELISM, hold?: SnapshotHold): Array<PackedTableSnapshot | ColumnarTableSnapshot> {
    const names = [...this.byName.keys()].sort();
    // An operator's tables mostly hold the same keys: a table over exactly the previous table's
    // keys does not list them again.
    // Kept columns' keys are read only when there is a previous table to compare with.
    let previous: { readonly keys: Key[] } | undefined;
    return names.map((name) => this.wholeTable(this.byName.get(name) as StateTable<unknown>, maxParallelism, hold, previous, (p) => (previous = p)));
  }

  /** One table whole, its keys left out when they are `previous`'s (then `setPrevious` is not called). */
  private wholeTable(
    t: StateTable<unknown>,
    maxParallelism: number,
    hold: SnapshotHold | undefined,
    previous: { readonly keys: Key[] } | undefined,
    setPrevious: (p: { readonly keys: Key[] }) => void,
  ): PackedTableSnapshot | ColumnarTableSnapshot {
    const kept = keepsColumns(t);
    if (kept !== undefined) {
      const columns = kept.snapshotColumns(maxParallelism, hold);
      const same = previous !== undefined && (previous.keys === columns.keys || sameKeys(previous.keys, columns.keys));
      if (!same) setPrevious(columns);
      return { name: t.name, kind: t.kind, packedKeys: same ? null : columns.packedKeys, packed: columns.packed };
    }
    const keys = sortedByKeyGroup(t.keys(), maxParallelism);
    const values = keys.map((k) => t.get(k));
    if (t.kind === "map") for (let i = 0; i < values.length; i++) values[i] = flatten(values[i] as Map<string, unknown>);
    const same = previous !== undefined && sameKeys(previous.keys, keys);
    if (!same) setPrevious({ keys });
    return { name: t.name, kind: t.kind, keys: same ? null : keys, values };
  }

  snapshotChangelog(maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): Array<ChangelogTableSnapshot | { name: string; kind: StateKind; changes: TableChanges }> {
    // As snapshotColumns, tables over the previous whole table's keys not listing them again; a
    // table of changes lists its own keys and is not such a previous table.
    let previous: { readonly keys: Key[] } | undefined;
    return [...this.byName.keys()].sort().map((name) => {
      const t = this.byName.get(name) as StateTable<unknown>;
      const kept = keepsColumns(t);
      if (kept?.snapshotChangelog === undefined) return this.wholeTable(t, maxParallelism, hold, previous, (p) => (previous = p));
      const part = kept.snapshotChangelog(maxParallelism, hold, delta);
      if ("changedKeys" in part) return { name, kind: t.kind, changes: part };
      const same = previous !== undefined && (previous.keys === part.keys || sameKeys(previous.keys, part.keys));
      if (!same) previous = part;
      return { name, kind: t.kind, packedKeys: same ? null : part.packedKeys, packed: part.packed };
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
    const tables = [...this.byName.values()].filter((t) => t.size > 0);
    // With one table (most operators) its size is the key count: no set of every key, once a second.
    const keys = tables.length > 1 ? new Set<Key>() : undefined;
    let stateEntries = 0;
    let stateBytes = 0;
    for (const t of tables) {
      const n = t.size;
      const step = n > STATS_SAMPLE ? n / STATS_SAMPLE : 1;
      let next = 0;
      let i = 0;
      let sampledBytes = 0;
      let sampled = 0;
      const known = (t as AdoptedTable).estimatedBytes?.();
      if (known !== undefined && t.kind !== "map") {
        // An adopted table knows its bytes: only its keys are needed, not its values in stored form.
        if (keys) for (const k of t.keys()) keys.add(k);
        stateEntries += n;
        stateBytes += known;
        continue;
      }
      for (const [k, v] of t.entries()) {
        keys?.add(k);
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
    return { keys: keys ? keys.size : (tables[0]?.size ?? 0), stateEntries, stateBytes };
  }
}
