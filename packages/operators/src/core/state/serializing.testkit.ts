// A serializing keyed state backend for tests: every value is stored as JSON text and parsed on
// each read, as an on-disk backend (LMDB, RocksDB) stores bytes. It keeps nothing by reference
// and adopts no table, so operators run their generic storage (state handles and timers) on it:
// the path the runner's disk backend takes, tested here without the disk.
import type { Key } from "../api";
import { DEFAULT_MAX_PARALLELISM, keyGroupOf } from "../keys";
import type { KeyedStateBackend, StateBackendStats, StateKind, StateTable, TableSnapshot } from "./backend";

/** Map state is stored as its [mapKey, value] pairs, other kinds as they are. */
const encode = (kind: StateKind, v: unknown): string => JSON.stringify(kind === "map" ? [...(v as Map<string, unknown>).entries()] : v);
const decode = (kind: StateKind, text: string): unknown => (kind === "map" ? new Map(JSON.parse(text) as Array<[string, unknown]>) : JSON.parse(text));

class SerializingTable implements StateTable<unknown> {
  readonly bytes = new Map<Key, string>();
  constructor(
    readonly name: string,
    readonly kind: StateKind,
  ) {}
  get(key: Key): unknown {
    const t = this.bytes.get(key);
    return t === undefined ? undefined : decode(this.kind, t);
  }
  put(key: Key, value: unknown): void {
    this.bytes.set(key, encode(this.kind, value));
  }
  delete(key: Key): void {
    this.bytes.delete(key);
  }
  has(key: Key): boolean {
    return this.bytes.has(key);
  }
  get size(): number {
    return this.bytes.size;
  }
  keys(): IterableIterator<Key> {
    return this.bytes.keys();
  }
  *entries(): IterableIterator<[Key, unknown]> {
    for (const [k, t] of this.bytes) yield [k, decode(this.kind, t)];
  }
}

export class SerializingStateBackend implements KeyedStateBackend {
  private readonly byName = new Map<string, SerializingTable>();

  table<V>(name: string, kind: StateKind): StateTable<V> {
    let t = this.byName.get(name);
    if (t === undefined) {
      t = new SerializingTable(name, kind);
      this.byName.set(name, t);
    }
    return t as StateTable<V>;
  }
  tables(): readonly StateTable<unknown>[] {
    return [...this.byName.values()];
  }
  snapshot(maxParallelism = DEFAULT_MAX_PARALLELISM): TableSnapshot[] {
    return [...this.byName.keys()].sort().map((name) => {
      const t = this.byName.get(name) as SerializingTable;
      const keys = [...t.bytes.keys()].sort((a, b) => keyGroupOf(a, maxParallelism) - keyGroupOf(b, maxParallelism) || (a < b ? -1 : a > b ? 1 : 0));
      return { name, kind: t.kind, entries: keys.map((k): [Key, unknown] => [k, JSON.parse(t.bytes.get(k) as string)]) };
    });
  }
  restore(tables: readonly TableSnapshot[], keep?: (key: Key) => boolean): void {
    this.byName.clear();
    for (const ts of tables) {
      const t = this.table(ts.name, ts.kind) as SerializingTable;
      for (const [k, v] of ts.entries) if (!keep || keep(k)) t.bytes.set(k, JSON.stringify(v));
    }
  }
  stats(): StateBackendStats {
    const keys = new Set<Key>();
    let stateEntries = 0;
    let stateBytes = 0;
    for (const t of this.byName.values()) {
      for (const [k, text] of t.bytes) {
        keys.add(k);
        stateEntries += t.kind === "map" ? (decode("map", text) as Map<string, unknown>).size : 1;
        stateBytes += k.length + text.length;
      }
    }
    return { keys: keys.size, stateEntries, stateBytes };
  }
}
