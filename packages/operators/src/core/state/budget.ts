// The per-key state limit (settings.maxStateBytesPerKey): state handles that account the estimated
// size each key keeps under each name, and fail the job when one key crosses the limit. Used where
// user code decides what is kept (process.custom); the built-in operators' state is bounded by
// their params, and the whole job's state by the runner's job budget (settings.maxJobStateBytes).
import type { Key, ListState, MapState, ValueState } from "../api";
import { formatBytes } from "../../limits";
import { estimateBytes, MAP_ENTRY_OVERHEAD } from "./size";

/** A key's state crossed the per-key limit: this fails the job (it is not a record's error). */
export class StateBudgetExceededError extends Error {
  constructor(
    readonly nodeId: string,
    readonly key: Key,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`node "${nodeId}": key "${String(key)}" keeps ${formatBytes(bytes)} of state, over the per-key limit of ${formatBytes(limit)} (settings.maxStateBytesPerKey)`);
    this.name = "StateBudgetExceededError";
  }
}

/**
 * The bytes each key keeps, per state name, for one operator. Counts grow with writes and are
 * recomputed from the live state (TTL-expired entries excluded) before a key is judged over.
 */
export class KeyStateBudget {
  private readonly bytes = new Map<Key, Map<string, number>>();
  /** Set once a key crossed the limit: user code may catch the throw, the job fails anyway. */
  exceeded: StateBudgetExceededError | undefined;

  constructor(
    readonly nodeId: string,
    readonly maxBytesPerKey: number,
    private readonly currentKey: () => Key,
  ) {}

  value<T>(name: string, h: ValueState<T>): ValueState<T> {
    const exact = (): number => estimateBytes(h.value());
    return {
      value: () => h.value(),
      update: (v) => {
        h.update(v);
        this.set(name, estimateBytes(v), exact);
      },
      clear: () => {
        h.clear();
        this.set(name, 0, exact);
      },
    };
  }

  list<T>(name: string, h: ListState<T>): ListState<T> {
    const exact = (): number => estimateBytes(h.get());
    return {
      get: () => h.get(),
      add: (v) => {
        h.add(v);
        const known = this.known(name);
        this.set(name, known === undefined ? exact() : known + 8 + estimateBytes(v), exact);
      },
      update: (vs) => {
        h.update(vs);
        this.set(name, estimateBytes(vs), exact);
      },
      clear: () => {
        h.clear();
        this.set(name, 0, exact);
      },
    };
  }

  map<V>(name: string, h: MapState<V>): MapState<V> {
    const exact = (): number => {
      let n = 32;
      for (const [k, v] of h.entries()) n += MAP_ENTRY_OVERHEAD + estimateBytes(k) + estimateBytes(v);
      return n;
    };
    const entryBytes = (k: string, v: V | undefined): number => (v === undefined ? 0 : MAP_ENTRY_OVERHEAD + estimateBytes(k) + estimateBytes(v));
    return {
      get: (k) => h.get(k),
      put: (k, v) => {
        const known = this.known(name);
        const old = known === undefined ? undefined : h.get(k);
        h.put(k, v);
        this.set(name, known === undefined ? exact() : known - entryBytes(k, old) + entryBytes(k, v), exact);
      },
      remove: (k) => {
        const known = this.known(name);
        const old = known === undefined ? undefined : h.get(k);
        h.remove(k);
        this.set(name, known === undefined ? exact() : known - entryBytes(k, old), exact);
      },
      contains: (k) => h.contains(k),
      entries: () => h.entries(),
      keys: () => h.keys(),
      isEmpty: () => h.isEmpty(),
      clear: () => {
        h.clear();
        this.set(name, 0, exact);
      },
    };
  }

  private known(name: string): number | undefined {
    return this.bytes.get(this.currentKey())?.get(name);
  }

  private set(name: string, counted: number, exact: () => number): void {
    const key = this.currentKey();
    let names = this.bytes.get(key);
    if (counted <= 0) {
      names?.delete(name);
      if (names?.size === 0) this.bytes.delete(key);
      return;
    }
    if (!names) this.bytes.set(key, (names = new Map()));
    names.set(name, counted);
    let total = 0;
    for (const n of names.values()) total += n;
    if (total <= this.maxBytesPerKey) return;
    // Counts only grow between writes (TTL expiry is not seen here): judge on the live state.
    names.set(name, exact());
    total = 0;
    for (const n of names.values()) total += n;
    if (total <= this.maxBytesPerKey) return;
    this.exceeded ??= new StateBudgetExceededError(this.nodeId, key, total, this.maxBytesPerKey);
    throw this.exceeded;
  }
}
