// Key slots: heap-only key -> slot index lookup for operators that keep their keyed state in flat
// arrays indexed by slot (columns), chosen only on a backend that adopts tables (see backend.ts).
// An open-addressing table of our own over an Int32Array, rather than a JS Map: a Map lookup over a
// million keys is several dependent cache misses (bucket, entry, the other key's hash), this one is
// usually one (the probed position holds the hash and the slot side by side).
import type { Key } from "../api";
import { TimeBuckets } from "../time-buckets";
import { stateBuffer, stateInt32Array } from "./state-memory";
import { KeptColumns, type AdoptedTable, type MaterializeBudget, type PackedColumns, type SnapshotHold, type StateKind, type TableChanges } from "./backend";

/**
 * FNV-1a over the UTF-16 code units, even and odd ones in two lanes (each step waits for the last
 * multiply: two independent chains hash a card number in about 60 % of one chain's time), then a
 * murmur3 finalizer for the low bits we mask with. Only this process's tables use it.
 */
export function hashKey(key: string): number {
  const n = key.length;
  let even = 0x811c9dc5 | 0;
  let odd = n | 0;
  let i = 0;
  for (; i + 1 < n; i += 2) {
    even = Math.imul(even ^ key.charCodeAt(i), 0x01000193);
    odd = Math.imul(odd ^ key.charCodeAt(i + 1), 0x01000193);
  }
  if (i < n) even = Math.imul(even ^ key.charCodeAt(i), 0x01000193);
  let h = even ^ Math.imul(odd, 0x9e3779b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

const MIN_POSITIONS = 16;

/**
 * Stable slots for keys: a key keeps its slot until it is deleted, and freed slots are reused
 * (a free list), so per-key columns stay dense. Positions hold [hash, slot + 1] (0: empty), linear
 * probing at load <= 1/2, backward-shift deletion (no tombstones, so probe runs stay short under
 * the churn of TTL'd keys).
 */
export class KeySlots {
  private positions: Int32Array = new Int32Array(2 * MIN_POSITIONS);
  private mask = MIN_POSITIONS - 1;
  /** The key of each slot; undefined when the slot is free. */
  private keyOf: Array<Key | undefined> = [];
  /**
   * Per slot, its key's hash and length side by side ([2 slot], [2 slot + 1]): a delete finds the
   * key's position and its share of keyBytes in one line, without reading the key string (a
   * cache miss of its own when a million keys are spread over the heap).
   */
  private hashLen: Int32Array = new Int32Array(2 * MIN_POSITIONS);
  /** Freed slots, a stack of the first `freeCount` (an Int32Array as long as the capacity: it never reallocates as it empties and refills). */
  private free: Int32Array = new Int32Array(MIN_POSITIONS);
  private freeCount = 0;
  private high = 0;
  private live = 0;
  private keyBytes = 0;
  /** Where the last find() that missed stopped (-1: none since the last change), and the key's hash. */
  private missAt = -1;
  private missHash = 0;
  private missKey: Key | undefined;
  /** Slot capacity: columns indexed by slot must hold this many rows (it only grows). */
  capacity = MIN_POSITIONS;

  get size(): number {
    return this.live;
  }

  /** Slots ever handed out: every live slot is below it. */
  get highWater(): number {
    return this.high;
  }

  keyAt(slot: number): Key | undefined {
    return this.keyOf[slot];
  }

  /** The key's slot, or -1 (then addMissing() may add it without hashing and probing again). */
  find(key: Key): number {
    return this.findHashed(key, hashKey(key));
  }

  /** find() with the key's hashKey() already computed (`h` must be exactly that). */
  findHashed(key: Key, h: number): number {
    const pos = this.positions;
    const mask = this.mask;
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const s = pos[2 * p + 1] as number;
      if (s === 0) {
        this.missAt = p;
        this.missHash = h;
        this.missKey = key;
        return -1;
      }
      if (pos[2 * p] === h && this.keyOf[s - 1] === key) return s - 1;
    }
  }

  /**
   * Adds the key the last missing find() did not find, at the empty position that find() stopped at. The
   * caller must not have changed the slots in between (dedup: look up, then pass the id).
   */
  addMissing(key: Key): number {
    const p = this.missAt;
    this.missAt = -1;
    if (p < 0 || this.missKey !== key) throw new Error("KeySlots.addMissing needs a find() of that key that missed, with no change to the slots since");
    return this.insert(key, this.missHash, p);
  }

  /** The key's slot, added when absent (then `added` is true until the next call). */
  added = false;
  findOrAdd(key: Key): number {
    return this.findOrAddHashed(key, hashKey(key));
  }

  /** findOrAdd with the key's hashKey() already computed (`h` must be exactly that). */
  findOrAddHashed(key: Key, h: number): number {
    const pos = this.positions;
    const mask = this.mask;
    let p = h & mask;
    for (; ; p = (p + 1) & mask) {
      const s = pos[2 * p + 1] as number;
      if (s === 0) break;
      if (pos[2 * p] === h && this.keyOf[s - 1] === key) {
        this.added = false;
        return s - 1;
      }
    }
    this.added = true;
    return this.insert(key, h, p);
  }

  /** Gives an absent key a slot and puts it at p, the empty position that ended its probe. */
  private insert(key: Key, h: number, p: number): number {
    this.missAt = -1;
    const slot = this.freeCount > 0 ? (this.free[--this.freeCount] as number) : this.high++;
    if (slot >= this.capacity) this.growSlots();
    this.keyOf[slot] = key;
    this.hashLen[2 * slot] = h;
    this.hashLen[2 * slot + 1] = key.length;
    this.live++;
    this.keyBytes += 16 + key.length;
    if (2 * this.live > this.mask + 1) {
      this.rehash(2 * (this.mask + 1)); // places every live slot, this one included
    } else {
      const pos = this.positions;
      pos[2 * p] = h;
      pos[2 * p + 1] = slot + 1;
    }
    return slot;
  }

  /** Frees a live slot (its key becomes absent; the slot may be handed out again). */
  delete(slot: number): void {
    const key = this.keyOf[slot];
    if (key === undefined) return;
    this.missAt = -1;
    const pos = this.positions;
    const mask = this.mask;
    let i = (this.hashLen[2 * slot] as number) & mask;
    while ((pos[2 * i + 1] as number) !== slot + 1) i = (i + 1) & mask;
    // Backward shift: move later entries of the run into the hole when their home allows it.
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const s = pos[2 * j + 1] as number;
      if (s === 0) break;
      const home = (pos[2 * j] as number) & mask;
      const stays = i <= j ? i < home && home <= j : i < home || home <= j;
      if (stays) continue;
      pos[2 * i] = pos[2 * j] as number;
      pos[2 * i + 1] = s;
      i = j;
    }
    pos[2 * i] = 0;
    pos[2 * i + 1] = 0;
    this.keyOf[slot] = undefined;
    this.free[this.freeCount++] = slot;
    this.live--;
    this.keyBytes -= 16 + (this.hashLen[2 * slot + 1] as number);
  }

  /** A slot's key hash (what touch() reads first: callers read many slots' hashes before touching them). */
  hashAt(slot: number): number {
    return this.hashLen[2 * slot] as number;
  }

  /**
   * Reads the home position of a live slot's key, and returns what it read: a caller about to
   * delete many slots reads theirs first, so that their cache misses overlap rather than queue.
   */
  touch(slot: number): number {
    return this.homeOf(this.hashLen[2 * slot] as number);
  }

  /**
   * What the home position of hash `h` holds: its slot + 1, or 0 when empty. Callers looking many
   * keys up read their homes first (and then those slots' keys, keyAt), so that the cache misses of
   * different keys overlap; the lookups proper then find these lines in cache.
   */
  homeOf(h: number): number {
    return this.positions[2 * (h & this.mask) + 1] as number;
  }

  /**
   * The first stages of looking a chunk of keys up, each a loop whose loads do not depend on one
   * another, so that different keys' cache misses overlap instead of queueing one by one (within
   * one key they are dependent): the key strings' lines, first and last (hashing reads the characters one
   * after another, a loop too long to keep more than a key or two's misses in flight), then
   * hashes[i] = hashKey(keys[i]), the home positions (into homes[i], scratch) and the keys of the
   * slots there. The lookups proper (findHashed or findOrAddHashed with hashes[i]) then find these
   * lines in cache. Returns what it read: keep it, so that the compiler keeps the reads.
   */
  prefetch(keys: readonly Key[], n: number, hashes: Int32Array, homes: Int32Array): number {
    let touched = 0;
    // The last character, not the length: a short key straddles two cache lines about a third of
    // the time, and hashing then missed on the second one key by key (the hash loop was a third of
    // this function over a million keys; now a twentieth).
    for (let i = 0; i < n; i++) {
      const key = keys[i] as Key;
      touched += key.length === 0 ? 0 : key.charCodeAt(key.length - 1);
    }
    for (let i = 0; i < n; i++) hashes[i] = hashKey(keys[i] as Key);
    for (let i = 0; i < n; i++) homes[i] = this.homeOf(hashes[i] as number);
    for (let i = 0; i < n; i++) {
      const s = homes[i] as number;
      if (s !== 0 && this.keyOf[s - 1] !== undefined) touched++;
    }
    return touched;
  }

  /** Live slots in ascending slot order. */
  *slots(): IterableIterator<number> {
    for (let s = 0; s < this.high; s++) if (this.keyOf[s] !== undefined) yield s;
  }

  clear(): void {
    this.positions = new Int32Array(2 * MIN_POSITIONS);
    this.mask = MIN_POSITIONS - 1;
    this.keyOf = [];
    this.freeCount = 0;
    this.high = 0;
    this.live = 0;
    this.keyBytes = 0;
    this.missAt = -1;
  }

  /** Heap bytes of the lookup itself and its keys (not the owner's columns). */
  bytes(): number {
    return this.positions.byteLength + this.hashLen.byteLength + 4 * this.keyOf.length + this.free.byteLength + this.keyBytes;
  }

  private place(h: number, slot: number): void {
    const pos = this.positions;
    const mask = this.mask;
    let p = h & mask;
    while ((pos[2 * p + 1] as number) !== 0) p = (p + 1) & mask;
    pos[2 * p] = h;
    pos[2 * p + 1] = slot + 1;
  }

  private rehash(size: number): void {
    this.missAt = -1;
    this.positions = stateInt32Array(2 * size);
    this.mask = size - 1;
    for (let s = 0; s < this.high; s++) if (this.keyOf[s] !== undefined) this.place(this.hashLen[2 * s] as number, s);
  }

  private growSlots(): void {
    this.capacity *= 2;
    const h = stateInt32Array(2 * this.capacity);
    h.set(this.hashLen);
    this.hashLen = h;
    const f = stateInt32Array(this.capacity);
    f.set(this.free.subarray(0, this.freeCount));
    this.free = f;
  }
}

/** A column by slot: doubles, or int32s or bytes for counts and flags. */
type SlotColumn = Float64Array | Int32Array | Uint8Array;

/** Grows a column of `stride` values per slot to the slots' capacity, keeping its rows (new rows: `fill`), in state memory. */
export function growColumn(col: Float64Array, capacity: number, stride: number, fill?: number): Float64Array;
export function growColumn(col: Int32Array, capacity: number, stride: number, fill?: number): Int32Array;
export function growColumn(col: Uint8Array, capacity: number, stride: number, fill?: number): Uint8Array;
export function growColumn(col: SlotColumn, capacity: number, stride: number, fill = 0): SlotColumn {
  if (col.length >= capacity * stride) return col;
  const next = new (col.constructor as new (buffer: ArrayBufferLike) => SlotColumn)(stateBuffer(capacity * stride * col.BYTES_PER_ELEMENT));
  if (fill !== 0) next.fill(fill, col.length);
  next.set(col);
  return next;
}

/**
 * Slots due at a time, bucketed by time (width `width`, or by exact time when 0): the heap-only
 * replacement for one timer per key. A bucket is handed back once the watermark has passed every
 * time it may hold, so the owner re-checks each slot's own time (a slot may have been freed,
 * reused or rescheduled since). Unlike timers, no key, no namespace, no ordering within a bucket.
 * A bucket is an Int32Array with a count, kept in TimeBuckets (found by time, reused once handed back).
 */
export class SlotSchedule {
  private readonly buckets = new TimeBuckets<SlotBucket>((at) => ({ at, slots: new Int32Array(8), n: 0 }), SPARE_SLOT_BUCKETS);
  private count = 0;

  constructor(private readonly width: number) {}

  get size(): number {
    return this.count;
  }

  add(slot: number, time: number): void {
    const bucket = this.buckets.of(this.width === 0 ? time : Math.floor(time / this.width));
    if (bucket.n === bucket.slots.length) {
      const grown = new Int32Array(2 * bucket.n);
      grown.set(bucket.slots);
      bucket.slots = grown;
    }
    bucket.slots[bucket.n++] = slot;
    this.count++;
  }

  /** Calls `fn` for every slot of the buckets whose times are all <= watermark. */
  due(watermark: number, fn: (slot: number) => void): void {
    this.dueLists(watermark, (slots, n) => {
      for (let i = 0; i < n; i++) fn(slots[i] as number);
    });
  }

  /**
   * Hands over, oldest first, each bucket whose times are all <= watermark: its first `n` slots,
   * in the order added (the array is reused once `fn` returns).
   */
  dueLists(watermark: number, fn: (slots: Int32Array, n: number) => void): void {
    const exact = this.width === 0;
    const buckets = this.buckets;
    for (let b = buckets.oldestTime(); b !== undefined && (exact ? b <= watermark : (b + 1) * this.width <= watermark); b = buckets.oldestTime()) {
      const bucket = buckets.takeOldest();
      this.count -= bucket.n;
      fn(bucket.slots, bucket.n);
      bucket.n = 0;
      buckets.recycle(bucket);
    }
  }

  clear(): void {
    this.buckets.clear();
    this.count = 0;
  }
}

/** A bucket of SlotSchedule: the first `n` of `slots`. */
interface SlotBucket {
  /** Its time (or width-multiple index): the key it is listed under. */
  at: number;
  slots: Int32Array;
  n: number;
}

/** Handed-back buckets kept for reuse: more than the buckets a window of exact-millisecond times holds. */
const SPARE_SLOT_BUCKETS = 1024;

/**
 * What every adopted table has in common: read-only to everyone but its operator, sized and
 * listed from its entries() (called by snapshots and stats, not on the per-record path).
 */
export abstract class OperatorKeptTable implements AdoptedTable {
  abstract readonly name: string;
  abstract readonly kind: StateKind;
  abstract get(key: Key): unknown;
  abstract entries(): IterableIterator<[Key, unknown]>;
  abstract load(entries: ReadonlyArray<readonly [Key, unknown]>): void;
  has(key: Key): boolean {
    return this.get(key) !== undefined;
  }
  put(): void {
    throw new Error(`state "${this.name}" is kept in its operator's own layout and written only by the operator`);
  }
  delete(): void {
    throw new Error(`state "${this.name}" is kept in its operator's own layout and written only by the operator`);
  }
  get size(): number {
    let n = 0;
    for (const _ of this.keys()) n++;
    return n;
  }
  *keys(): IterableIterator<Key> {
    for (const [k] of this.entries()) yield k;
  }
}

/**
 * A state table over slots, as the backend snapshots and counts it: the key of each slot whose
 * `valueAt` is defined, with that value in the stored form the operator's generic handles would
 * have written.
 */
export class SlotTableView extends OperatorKeptTable {
  constructor(
    readonly name: string,
    readonly kind: StateKind,
    protected readonly slots: KeySlots,
    private readonly valueAt: (slot: number) => unknown,
    readonly load: (entries: ReadonlyArray<readonly [Key, unknown]>) => void,
    private readonly heapBytes?: () => number,
    /** The slot's value packed straight from its columns (see StoredValues.packedValue), or undefined where it cannot be. */
    packAt?: (slot: number) => Uint8Array | undefined,
  ) {
    super();
    if (packAt !== undefined && kind === "map") throw new Error(`state "${name}": map state cannot be packed from columns`);
    this.packedValue =
      packAt === undefined
        ? undefined
        : (key) => {
            const s = this.slots.find(key);
            return s < 0 ? undefined : packAt(s);
          };
  }
  /** Set only with packAt: snapshots otherwise pack get()'s values. */
  readonly packedValue: ((key: Key) => Uint8Array | undefined) | undefined;
  get(key: Key): unknown {
    const s = this.slots.find(key);
    return s < 0 ? undefined : this.valueAt(s);
  }
  *entries(): IterableIterator<[Key, unknown]> {
    for (const s of this.slots.slots()) {
      const v = this.valueAt(s);
      if (v !== undefined) yield [this.slots.keyAt(s) as Key, v];
    }
  }
  estimatedBytes(): number {
    return this.heapBytes?.() ?? 0;
  }
}

/**
 * A SlotTableView whose owner reports every change of a slot's value (changed()): its snapshot
 * columns are then kept from one snapshot to the next and only the changed keys packed again, as
 * for the heap's own tables, where the plain view's columns are rebuilt whole at every snapshot.
 * Worth it where most keys stay unchanged between checkpoints (a window over many quiet keys).
 */
export class ChangeReportingSlotTableView extends SlotTableView {
  private readonly kept = new KeptColumns(this.name, this.kind);

  /** The key's value was written, changed in place or removed since it was last reported. */
  changed(key: Key): void {
    this.kept.touched(key, this.slots.size);
  }

  snapshotColumns(maxParallelism: number, hold?: SnapshotHold): PackedColumns {
    return this.kept.snapshot(this, maxParallelism, hold);
  }

  snapshotChangelog(maxParallelism: number, hold: SnapshotHold | undefined, delta: boolean): PackedColumns | TableChanges {
    return this.kept.changelog(this, maxParallelism, hold, delta);
  }

  materialize(maxParallelism: number, budget?: MaterializeBudget): boolean {
    return this.kept.materialize(this, maxParallelism, budget);
  }
}
