// Where dedup keeps "when did this id pass, and how many copies were held back": one logic
// (dedup.ts), two storages. On any backend, two value states and one expiry timer per id; on the
// heap backend (RuntimeContext.adoptState), flat columns by slot and expiry by time buckets: no
// timer, no Map entry and no object per id, which is what a million live ids cost before.
import { valueState, type Key, type ProcessContext, type RuntimeContext, type StreamRecord, type TimerFiring, type ValueState } from "../../core/api";
import { growColumn, KeySlots, SlotSchedule, SlotTableView } from "../../core/state";

export const PASSED_AT = "passedAt";
export const DUPLICATES = "duplicates";
export const EXPIRY_TIMER = "expiry";

/**
 * An id is remembered from its pass at passedAt until the watermark reaches passedAt + ttlMs
 * (exactly when the generic storage's expiry timer fires; an id that passed when the watermark
 * was already there is forgotten at the next watermark advance, as that timer would fire then).
 */
export interface DedupStore {
  open(ctx: RuntimeContext): void;
  /**
   * Reads ahead for the records [from, to) (at most PREFETCH_CHUNK) about to be decided in order;
   * returns whether it did, so that passedAt may be told each one's index among them.
   */
  prefetch(records: readonly StreamRecord[], from: number, to: number): boolean;
  /**
   * When the current key's id passed, if it is remembered (the entry stays current for the calls
   * below); prefetched: the record's index in the last prefetch() that returned true, or -1.
   */
  passedAt(key: Key, ctx: ProcessContext, prefetched: number): number | undefined;
  /** One more copy held back for the entry passedAt() found; returns how many so far. */
  addDuplicate(key: Key): number;
  /** The id passes at ts: replaces what passedAt() found (its copy count restarts). */
  pass(key: Key, ts: number, ctx: ProcessContext): void;
  onTimer(timer: TimerFiring): void;
  onWatermark(watermark: number): void;
}

/** Any backend: two value states and an event-time timer per id at passedAt + ttlMs. */
export class HandleDedupStore implements DedupStore {
  private passed!: ValueState<number>;
  private duplicates!: ValueState<number>;
  private found: number | undefined;

  constructor(private readonly ttlMs: number) {}

  open(ctx: RuntimeContext): void {
    // Two value states rather than one object: a unique id (the common case) costs one number,
    // and only ids that actually have copies pay for a counter.
    this.passed = ctx.getValueState(valueState<number>(PASSED_AT));
    this.duplicates = ctx.getValueState(valueState<number>(DUPLICATES));
  }
  prefetch(): boolean {
    return false;
  }
  passedAt(): number | undefined {
    this.found = this.passed.value();
    return this.found;
  }
  addDuplicate(): number {
    const n = (this.duplicates.value() ?? 0) + 1;
    this.duplicates.update(n);
    return n;
  }
  pass(_key: Key, ts: number, ctx: ProcessContext): void {
    this.passed.update(ts);
    if (this.found !== undefined) this.duplicates.clear();
    ctx.timerService.registerEventTimeTimer(ts + this.ttlMs, EXPIRY_TIMER);
  }
  onTimer(timer: TimerFiring): void {
    // An older timer of an id that passed again since: the newer timer frees it.
    const passed = this.passed.value();
    if (passed !== undefined && passed + this.ttlMs <= timer.time) {
      this.passed.clear();
      this.duplicates.clear();
    }
  }
  onWatermark(): void {}
}

/** Row layout of the heap storage: one row of doubles per slot. */
const PASSED = 0;
const DUPS = 1;
/** The watermark advance (epoch) during which the id passed: see alive(). */
const EPOCH = 2;
const STRIDE = 3;
/** Records whose ids processBatch looks up ahead of deciding them (as the windows' LOOKUP_CHUNK). */
export const PREFETCH_CHUNK = 128;
/** Expired slots whose table positions the sweep reads ahead of freeing them. */
const SWEEP_CHUNK = 64;

/**
 * Heap backend: ids -> slots (KeySlots), a row [passedAt, duplicates, epoch] per slot, and the
 * slots bucketed by expiry time (a quarter of the TTL per bucket), freed when the watermark has
 * passed their bucket. Between its expiry and its bucket's sweep an entry is simply not alive.
 */
export class SlotDedupStore implements DedupStore {
  private readonly slots = new KeySlots();
  private rows: Float64Array = new Float64Array(0);
  private readonly expiries: SlotSchedule;
  /** Watermark advances seen; an entry written in the current one outlives an expiry already passed. */
  private epoch = 0;
  private watermark = Number.NEGATIVE_INFINITY;
  private slot = -1;
  /** What the sweep's first pass and prefetch() read, kept so that the compiler keeps the reads. */
  private touched = 0;
  /** prefetch()'s chunk: its keys, their hashes, and scratch for their home positions. */
  private readonly chunkKeys: Key[] = [];
  private readonly hashes = new Int32Array(PREFETCH_CHUNK);
  private readonly homes = new Int32Array(PREFETCH_CHUNK);

  constructor(private readonly ttlMs: number) {
    this.expiries = new SlotSchedule(ttlMs / 4);
  }

  open(ctx: RuntimeContext): void {
    const adopt = ctx.adoptState;
    if (adopt === undefined) throw new Error("SlotDedupStore needs a backend that adopts tables");
    const passed = new SlotTableView(PASSED_AT, "value", this.slots, (s) => (this.alive(s) ? this.rows[s * STRIDE + PASSED] : undefined), (entries) => this.load(entries, PASSED), () => this.slots.bytes() + this.rows.byteLength);
    // The handle storage's expiry timer per id is implied by passedAt (dedupSpec.impliedTimers).
    adopt(passed);
    adopt(new SlotTableView(DUPLICATES, "value", this.slots, (s) => (this.alive(s) && (this.rows[s * STRIDE + DUPS] as number) > 0 ? this.rows[s * STRIDE + DUPS] : undefined), (entries) => this.load(entries, DUPS)));
  }

  /** Alive: its expiry is after the watermark, or it passed since the last advance (the generic timer has not fired yet). */
  private alive(slot: number): boolean {
    const r = slot * STRIDE;
    return (this.rows[r + PASSED] as number) + this.ttlMs > this.watermark || this.rows[r + EPOCH] === this.epoch;
  }

  private load(entries: ReadonlyArray<readonly [Key, unknown]>, column: number): void {
    for (const [key, v] of entries) {
      const slot = this.slots.findOrAdd(key);
      this.rows = growColumn(this.rows, this.slots.capacity, STRIDE);
      const r = slot * STRIDE;
      this.rows[r + column] = v as number;
      // Restored entries were alive at the snapshot: keep them until the next advance at least.
      this.rows[r + EPOCH] = this.epoch;
      if (column === PASSED) this.expiries.add(slot, (v as number) + this.ttlMs);
    }
  }

  prefetch(records: readonly StreamRecord[], from: number, to: number): boolean {
    const n = to - from;
    const keys = this.chunkKeys;
    for (let i = 0; i < n; i++) keys[i] = (records[from + i] as StreamRecord).key as Key;
    this.touched = this.slots.prefetch(keys, n, this.hashes, this.homes);
    return true;
  }

  passedAt(key: Key, ctx: ProcessContext, prefetched: number): number | undefined {
    this.watermark = ctx.timerService.currentWatermark();
    // A prefetched hash is still the key's, and its probe finds the positions in cache; the table
    // may have changed since (an earlier record of the chunk passed), so the probe runs again.
    const slot = prefetched < 0 ? this.slots.find(key) : this.slots.findHashed(key, this.hashes[prefetched] as number);
    this.slot = slot;
    return slot >= 0 && this.alive(slot) ? this.rows[slot * STRIDE + PASSED] : undefined;
  }
  addDuplicate(): number {
    const r = this.slot * STRIDE + DUPS;
    const n = (this.rows[r] as number) + 1;
    this.rows[r] = n;
    return n;
  }
  pass(key: Key, ts: number): void {
    let slot = this.slot;
    if (slot < 0) {
      // passedAt() just missed this key: add it where that probe stopped (no second hash or probe).
      slot = this.slots.addMissing(key);
      if (slot >= this.rows.length / STRIDE) this.rows = growColumn(this.rows, this.slots.capacity, STRIDE);
    }
    const r = slot * STRIDE;
    this.rows[r + PASSED] = ts;
    this.rows[r + DUPS] = 0;
    this.rows[r + EPOCH] = this.epoch;
    this.expiries.add(slot, ts + this.ttlMs);
  }
  onTimer(): void {}
  onWatermark(watermark: number): void {
    this.watermark = watermark;
    this.epoch++;
    this.expiries.dueLists(watermark, (list, n) => {
      // A chunk's table positions are read first, then its ids freed in order: the positions are
      // cache misses in random order, and reading them back to back lets them overlap.
      for (let from = 0; from < n; from += SWEEP_CHUNK) {
        const to = Math.min(n, from + SWEEP_CHUNK);
        let touched = 0;
        for (let i = from; i < to; i++) {
          const slot = list[i] as number;
          if (this.slots.keyAt(slot) !== undefined) touched += this.slots.touch(slot);
        }
        this.touched = touched;
        for (let i = from; i < to; i++) {
          const slot = list[i] as number;
          if (this.slots.keyAt(slot) !== undefined && !this.alive(slot)) this.slots.delete(slot);
        }
      }
    });
  }
}
