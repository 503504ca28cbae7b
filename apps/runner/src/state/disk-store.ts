// The `disk` state backend: keyed state in an embedded LMDB store (lmdb-js), one store per task
// (the single-threaded job, or each keyed subtask) in its own folder under the job's working
// directory, so state can exceed memory. LMDB was chosen by measurement (bench/state-stores.ts):
// its reads are synchronous memory-mapped lookups, faster than classic-level's getSync, and so is a
// full scan (a full checkpoint); the engine's state interface is synchronous, so an asynchronous
// store could not serve it.
//
// Writes go through a write-back cache bounded in entries (reads are cached too, so a handle's
// read-modify-write costs one lookup); when it is full, every changed entry is written in one LMDB
// transaction. Each written key is also marked in a `dirty` table: a checkpoint flushes the cache
// and writes either a delta (the marked keys with their current value, or a deletion) or, every
// `maxDeltas` checkpoints or when the deltas outgrow the last full dump, a full dump; then clears
// the marks. The checkpoint lists the chain (a full file and the deltas over it, ./chain-files.ts)
// and a restore replays it into a fresh store, keeping only its key groups when rescaled.
// Keys are `node \0 table \0 key` (LMDB orders them bytewise, so one node's table is one range);
// values are MessagePack bytes, map state stored as its [mapKey, value] pairs.
//
// What stays on the heap: the engine's timers (TimerQueue) and the TTL expiry index, which are
// owned by the engine (core/host.ts, state/handles.ts) and snapshotted with the operator; keep
// per-key timers and TTL in mind when sizing a job's memory (Flink keeps timers in RocksDB too).
import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { Packr, Unpackr } from "msgpackr";
import { DEFAULT_MAX_PARALLELISM, keyGroupOf, type Key, type KeyedStateBackend, type StateBackendStats, type StateKind, type StateTable, type TableSnapshot } from "@keyflow/operators";
import { ChainFileWriter, readChainFile, type ChainHeader, type DiskChain } from "./chain-files";

const SEP = "\0";
const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const EMPTY = new Uint8Array(0);
const DISTINCT_KEYS_MS = 5_000;
/** LMDB's key limit (lmdb-js default maxKeySize), in UTF-8 bytes. */
const MAX_KEY_BYTES = 1978;

export interface DiskStoreOptions {
  /** The store's folder: emptied on open (the store is rebuilt from checkpoints, never reused). */
  dir: string;
  /** Names this task in checkpoint file names ("job", "keyed-0"). */
  label: string;
  /** Entries the write-back cache holds before it is written in one transaction. */
  cacheEntries?: number;
  /** A full dump after this many deltas in a row, so a restore replays a bounded chain. */
  maxDeltas?: number;
}

/** One cached entry: its value (undefined: absent), whether LMDB has it, and what it counts for. */
interface Slot {
  v: unknown;
  inDb: boolean;
  dirty: boolean;
  /** Stored bytes (key and value) as LMDB has them: the change in stateBytes at flush. */
  storedBytes: number;
  /** Entries it counts for (a map's size; 1 otherwise; 0 when absent). */
  n: number;
  table: TableCounts;
}

/** Live figures of one table, kept exact on every put and delete. */
interface TableCounts {
  kind: StateKind;
  size: number;
  entries: number;
  bytes: number;
}

export class DiskStateStore {
  private readonly env: RootDatabase;
  private readonly data: Database<Uint8Array, string>;
  private readonly dirty: Database<Uint8Array, string>;
  private readonly cache = new Map<string, Slot>();
  private readonly cacheEntries: number;
  private readonly maxDeltas: number;
  private readonly counts = new Map<string, TableCounts>();
  private readonly backends = new Map<string, DiskKeyedStateBackend>();
  /** The chain the next checkpoint extends; undefined: the next one is full. */
  private chain: DiskChain | undefined;
  private deltaBytes = 0;
  /** Snapshots leave entries out while a checkpoint takes them: the chain files hold them. */
  referenceMode = false;
  /** State came from a checkpoint chain: the operators' restore adds to it instead of replacing it. */
  preloaded = false;
  private closed = false;

  constructor(readonly opts: DiskStoreOptions) {
    rmSync(opts.dir, { recursive: true, force: true });
    mkdirSync(opts.dir, { recursive: true });
    // No fsync: the store is scratch, rebuilt from the checkpoint chain after any crash.
    this.env = open({ path: path.join(opts.dir, "state.mdb"), compression: false, noSync: true, noMetaSync: true, maxDbs: 4 });
    this.data = this.env.openDB<Uint8Array, string>({ name: "data", encoding: "binary" });
    this.dirty = this.env.openDB<Uint8Array, string>({ name: "dirty", encoding: "binary" });
    this.cacheEntries = opts.cacheEntries ?? 50_000;
    this.maxDeltas = opts.maxDeltas ?? 10;
  }

  /** The backend of one operator node (LocalJobOptions.stateBackend). */
  backendFor(nodeId: string): DiskKeyedStateBackend {
    if (nodeId.includes(SEP)) throw new Error(`node "${nodeId}": a node id cannot contain a NUL character with the disk state backend`);
    let b = this.backends.get(nodeId);
    if (!b) this.backends.set(nodeId, (b = new DiskKeyedStateBackend(this, nodeId)));
    return b;
  }

  /** Runs `fn` (the job's snapshot for a checkpoint) with snapshots leaving keyed state out. */
  referenceSnapshots<T>(fn: () => T): T {
    this.referenceMode = true;
    try {
      return fn();
    } finally {
      this.referenceMode = false;
    }
  }

  countsOf(prefix: string, kind: StateKind): TableCounts {
    let c = this.counts.get(prefix);
    if (!c) this.counts.set(prefix, (c = { kind, size: 0, entries: 0, bytes: 0 }));
    else c.kind = kind;
    return c;
  }

  // ---- entries --------------------------------------------------------------------------------

  private slot(table: TableCounts, storeKey: string): Slot {
    let s = this.cache.get(storeKey);
    if (s !== undefined) return s;
    const bytes = this.data.getBinaryFast(storeKey);
    let v: unknown;
    if (bytes !== undefined) v = decodeValue(table.kind, bytes);
    s = { v, inDb: bytes !== undefined, dirty: false, storedBytes: bytes === undefined ? 0 : storedSize(storeKey, bytes.length), n: bytes === undefined ? 0 : countOf(table.kind, v), table };
    this.cache.set(storeKey, s);
    if (this.cache.size > this.cacheEntries) this.evict(storeKey);
    return s;
  }

  get(table: TableCounts, storeKey: string): unknown {
    return this.slot(table, storeKey).v;
  }

  put(table: TableCounts, storeKey: string, value: unknown): void {
    if (value === undefined) return this.delete(table, storeKey);
    const s = this.slot(table, storeKey);
    if (s.v === undefined) table.size++;
    const n = countOf(table.kind, value);
    table.entries += n - s.n;
    s.n = n;
    s.v = value;
    s.dirty = true;
  }

  delete(table: TableCounts, storeKey: string): void {
    const s = this.slot(table, storeKey);
    if (s.v === undefined) return;
    table.size--;
    table.entries -= s.n;
    s.n = 0;
    s.v = undefined;
    s.dirty = true;
  }

  /** Writes every changed entry in one transaction and marks them for the next delta. */
  flush(): void {
    let any = false;
    for (const s of this.cache.values()) if (s.dirty) any = true;
    if (!any) return;
    this.env.transactionSync(() => {
      for (const [k, s] of this.cache) {
        if (!s.dirty) continue;
        if (s.v === undefined) {
          s.dirty = false;
          if (!s.inDb) continue; // written and deleted since the last flush: nothing changed here
          this.data.removeSync(k);
          s.table.bytes -= s.storedBytes;
          s.storedBytes = 0;
          s.inDb = false;
        } else {
          const bytes = encodeValue(s.table.kind, s.v);
          if (Buffer.byteLength(k) > MAX_KEY_BYTES) throw new Error(`state key "${k.split(SEP).slice(2).join(SEP).slice(0, 80)}…" of node "${k.split(SEP)[0]}" is longer than the disk backend's ${MAX_KEY_BYTES} bytes`);
          this.data.putSync(k, bytes);
          const size = storedSize(k, bytes.byteLength);
          s.table.bytes += size - s.storedBytes;
          s.storedBytes = size;
          s.inDb = true;
        }
        this.dirty.putSync(k, EMPTY);
        s.dirty = false;
      }
    });
  }

  /** The cache is full: written out and emptied (except the entry just read, which the caller holds). */
  private evict(keep: string): void {
    this.flush();
    const s = this.cache.get(keep);
    this.cache.clear();
    if (s) this.cache.set(keep, s);
  }

  /** Keys of one table, in store order (the cache written out first). */
  *keysOf(prefix: string): IterableIterator<string> {
    this.flush();
    for (const k of this.data.getKeys({ start: prefix, end: rangeEnd(prefix), snapshot: false })) yield k.slice(prefix.length);
  }

  *entriesOf(prefix: string, kind: StateKind): IterableIterator<[string, unknown]> {
    this.flush();
    for (const { key, value } of this.data.getRange({ start: prefix, end: rangeEnd(prefix), snapshot: false })) yield [key.slice(prefix.length), decodeValue(kind, value)];
  }

  /** Drops every entry of a node (a restore that replaces its state). */
  clearNode(nodeId: string): void {
    this.flush();
    const start = nodeId + SEP;
    const end = nodeId + "\u0001";
    this.env.transactionSync(() => {
      for (const k of this.data.getKeys({ start, end, snapshot: false })) {
        this.data.removeSync(k);
        this.dirty.putSync(k, EMPTY);
      }
    });
    for (const k of [...this.cache.keys()]) if (k.startsWith(start)) this.cache.delete(k);
    for (const [p, c] of this.counts) if (p.startsWith(start)) Object.assign(c, { size: 0, entries: 0, bytes: 0 });
  }

  /** Last distinct-key counts of multi-table nodes, and when they were taken. */
  private readonly distinctCache = new Map<string, { n: number; at: number }>();

  /**
   * Distinct keys over several tables of a node: a merge of their sorted key ranges (no set of
   * keys in memory). Metrics ask every second; a scan is reused for DISTINCT_KEYS_MS.
   */
  distinctKeys(prefixes: string[]): number {
    if (prefixes.length === 0) return 0;
    if (prefixes.length === 1) return this.counts.get(prefixes[0]!)?.size ?? 0;
    const id = prefixes.join("|");
    const cached = this.distinctCache.get(id);
    if (cached && (this.closed || performance.now() - cached.at < DISTINCT_KEYS_MS)) return cached.n;
    if (this.closed) return 0;
    const n = this.scanDistinct(prefixes);
    this.distinctCache.set(id, { n, at: performance.now() });
    return n;
  }

  private scanDistinct(prefixes: string[]): number {
    let n = 0;
    const iters = prefixes.map((p) => this.keysOf(p));
    const heads = iters.map((it) => it.next());
    for (;;) {
      let min: string | undefined;
      for (const h of heads) if (!h.done && (min === undefined || h.value < min)) min = h.value;
      if (min === undefined) break;
      n++;
      heads.forEach((h, i) => {
        if (!h.done && h.value === min) heads[i] = iters[i]!.next();
      });
    }
    return n;
  }

  // ---- checkpoints ----------------------------------------------------------------------------

  /**
   * Writes this store's part of checkpoint `id` into `sharedDir` (fsynced): a delta over the
   * current chain, or a full dump. `relDir` is how the checkpoint's folder reaches `sharedDir`.
   * Returns the chain a restore replays. Runs on the engine thread between two records.
   */
  writeCheckpoint(id: number, sharedDir: string, relDir: string, suffix: string): DiskChain {
    this.flush();
    // A full dump when the chain is long, or when its deltas already outweigh the state itself.
    let stateBytes = 0;
    for (const c of this.counts.values()) stateBytes += c.bytes;
    const full = this.chain === undefined || this.chain.files.length - 1 >= this.maxDeltas || this.deltaBytes > stateBytes;
    const name = `${this.opts.label}-${String(id).padStart(10, "0")}-${suffix}.${full ? "full" : "delta"}`;
    const file = path.join(sharedDir, name);
    mkdirSync(sharedDir, { recursive: true });
    const w = new ChainFileWriter(file, { format: "keyflow.disk-state/v1", kind: full ? "full" : "delta", tables: this.tableKinds() });
    try {
      // Nothing writes meanwhile: the engine thread is here.
      if (full) {
        for (const { key, value } of this.data.getRange({ snapshot: false })) w.add(key, value);
      } else {
        for (const key of this.dirty.getKeys({ snapshot: false })) w.add(key, this.data.getBinary(key) ?? null);
      }
    } catch (err) {
      w.abandon();
      rmSync(file, { force: true });
      throw err;
    }
    const bytes = w.close();
    this.dirty.clearSync();
    const entry = { file: path.posix.join(relDir, name), kind: full ? ("full" as const) : ("delta" as const), checkpoint: id, bytes, entries: w.entries };
    if (full) {
      this.chain = { files: [entry] };
      this.deltaBytes = 0;
    } else {
      this.chain = { files: [...(this.chain?.files ?? []), entry] };
      this.deltaBytes += bytes;
    }
    return this.chain;
  }

  /** The next checkpoint writes a full dump (the chain it would extend may not be kept). */
  forgetChain(): void {
    this.chain = undefined;
  }

  private tableKinds(): ChainHeader["tables"] {
    const out: ChainHeader["tables"] = {};
    for (const [p, c] of this.counts) out[p] = c.kind;
    return out;
  }

  /**
   * Replays checkpoint chains into this (fresh) store before the job's operators restore:
   * `resolve` turns a chain file name into a path; `keep` filters keys (a rescaled subtask's key
   * groups). Several chains (a rescale merging subtasks) hold disjoint keys.
   */
  load(chains: ReadonlyArray<{ chain: DiskChain; resolve: (file: string) => string }>, keep?: (key: Key) => boolean): void {
    const kinds = new Map<string, StateKind>();
    for (const { chain, resolve } of chains) {
      for (const f of chain.files) {
        const header = readChainFile(resolve(f.file), (entries) => {
          this.env.transactionSync(() => {
            for (const [k, v] of entries) {
              if (keep && !keep(userKeyOf(k))) continue;
              if (v === null) this.data.removeSync(k);
              else this.data.putSync(k, v);
            }
          });
        });
        for (const [p, kind] of Object.entries(header.tables)) kinds.set(p, kind);
      }
    }
    this.recount(kinds);
    this.preloaded = true;
    // The next checkpoint is full: the restored chains belong to other checkpoints (or other subtasks).
    this.chain = undefined;
  }

  /** Table figures from the store itself (after a load). */
  private recount(kinds: Map<string, StateKind>): void {
    this.counts.clear();
    for (const { key, value } of this.data.getRange({ snapshot: false })) {
      const prefix = prefixOf(key);
      const kind = kinds.get(prefix) ?? "value";
      const c = this.countsOf(prefix, kind);
      c.size++;
      c.entries += kind === "map" ? countOf(kind, decodeValue(kind, value)) : 1;
      c.bytes += storedSize(key, value.length);
    }
  }

  /** Closes the store and deletes its folder (the checkpoints keep what must survive). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cache.clear();
    void this.env.close();
    rmSync(this.opts.dir, { recursive: true, force: true });
  }
}

export class DiskKeyedStateBackend implements KeyedStateBackend {
  private readonly byName = new Map<string, DiskStateTable<unknown>>();

  constructor(
    private readonly store: DiskStateStore,
    readonly nodeId: string,
  ) {}

  table<V>(name: string, kind: StateKind): StateTable<V> {
    let t = this.byName.get(name);
    if (t === undefined) {
      if (name.includes(SEP)) throw new Error(`node "${this.nodeId}": state name "${name}" cannot contain a NUL character with the disk state backend`);
      t = new DiskStateTable<unknown>(this.store, this.nodeId, name, kind);
      this.byName.set(name, t);
    } else if (t.kind !== kind) {
      throw new Error(`state "${name}" is declared as ${kind} state but already exists as ${t.kind} state; state names must be unique within an operator`);
    }
    return t as DiskStateTable<V>;
  }

  tables(): readonly StateTable<unknown>[] {
    return [...this.byName.values()];
  }

  snapshot(maxParallelism = DEFAULT_MAX_PARALLELISM): TableSnapshot[] {
    const names = [...this.byName.keys()].sort();
    return names.map((name) => {
      const t = this.byName.get(name)!;
      if (this.store.referenceMode) return { name, kind: t.kind, entries: [] };
      // The heap backend's order: by key group, then key.
      const entries = [...this.store.entriesOf(t.prefix, t.kind)].map(([k, v]) => [k, t.kind === "map" ? [...(v as Map<string, unknown>).entries()] : v] as [Key, unknown]);
      const groups = new Map(entries.map(([k]) => [k, keyGroupOf(k, maxParallelism)]));
      entries.sort((a, b) => groups.get(a[0])! - groups.get(b[0])! || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      return { name, kind: t.kind, entries };
    });
  }

  restore(tables: readonly TableSnapshot[], keep?: (key: Key) => boolean): void {
    // State replayed from a disk checkpoint chain is already here (its snapshot lists no entries);
    // a heap-format snapshot (a heap checkpoint, a savepoint) replaces the node's state.
    if (!this.store.preloaded) this.store.clearNode(this.nodeId);
    for (const ts of tables) {
      const t = this.table<unknown>(ts.name, ts.kind);
      for (const [k, v] of ts.entries) {
        if (keep && !keep(k)) continue;
        t.put(k, ts.kind === "map" ? new Map(v as Array<[string, unknown]>) : v);
      }
    }
  }

  stats(): StateBackendStats {
    const tables = [...this.byName.values()].filter((t) => t.size > 0);
    let stateEntries = 0;
    let stateBytes = 0;
    for (const t of tables) {
      stateEntries += t.counts.entries;
      stateBytes += t.counts.bytes;
    }
    return { keys: this.store.distinctKeys(tables.map((t) => t.prefix)), stateEntries, stateBytes };
  }
}

class DiskStateTable<V> implements StateTable<V> {
  readonly prefix: string;
  readonly counts: TableCounts;
  readonly storesByReference = false;

  constructor(
    private readonly store: DiskStateStore,
    nodeId: string,
    readonly name: string,
    readonly kind: StateKind,
  ) {
    this.prefix = nodeId + SEP + name + SEP;
    this.counts = store.countsOf(this.prefix, kind);
  }
  get(key: Key): V | undefined {
    return this.store.get(this.counts, this.prefix + key) as V | undefined;
  }
  put(key: Key, value: V): void {
    this.store.put(this.counts, this.prefix + key, value);
  }
  delete(key: Key): void {
    this.store.delete(this.counts, this.prefix + key);
  }
  has(key: Key): boolean {
    return this.get(key) !== undefined;
  }
  get size(): number {
    return this.counts.size;
  }
  keys(): IterableIterator<Key> {
    return this.store.keysOf(this.prefix);
  }
  *entries(): IterableIterator<[Key, V]> {
    for (const [k, v] of this.store.entriesOf(this.prefix, this.kind)) yield [k, v as V];
  }
}

function encodeValue(kind: StateKind, v: unknown): Uint8Array {
  return packr.pack(kind === "map" ? [...(v as Map<string, unknown>).entries()] : v);
}

function decodeValue(kind: StateKind, bytes: Uint8Array): unknown {
  const v: unknown = unpackr.unpack(bytes);
  return kind === "map" ? new Map(v as Array<[string, unknown]>) : v;
}

function countOf(kind: StateKind, v: unknown): number {
  if (v === undefined) return 0;
  return kind === "map" ? (v as Map<string, unknown>).size : 1;
}

const storedSize = (key: string, valueBytes: number) => key.length + valueBytes;
const rangeEnd = (prefix: string) => prefix.slice(0, -1) + "\u0001";

function prefixOf(storeKey: string): string {
  const a = storeKey.indexOf(SEP);
  const b = storeKey.indexOf(SEP, a + 1);
  return storeKey.slice(0, b + 1);
}

function userKeyOf(storeKey: string): string {
  const a = storeKey.indexOf(SEP);
  return storeKey.slice(storeKey.indexOf(SEP, a + 1) + 1);
}
