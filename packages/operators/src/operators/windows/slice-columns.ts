// The sliced window's time-major storage, on the heap, for counts (tumbling and hopping): one list of
// per-key counts per slice instead of one array of slices per key.
//
// Why: key-major, every record and every firing of a 1-hour window sliding every minute reads a key's
// array of 60 slices out of memory, and every new slice shifts it; 100 k keys hold 84 MB of such
// arrays. Time-major, a record adds 1 to its key's cell in the newest list (100 k keys: about 2 MB,
// which stays in cache), and a firing adds the newest list to each key's running count, emits it and
// takes out the list that leaves the window: the window's count without merging its slices. Counts
// are integers, so running counts equal merges exactly.
//
// The firing is the operator's own: at each window end the watermark passes, every key with data
// in that window emits, in key order (the order in which the key-major timers of one time fire),
// from a list of such keys kept sorted. No per-key timer is registered: the heap snapshot leaves
// them implied in the stored form (sliceColumnsTimers), a key's array of slices as the key-major
// storage writes it, built from the lists for the keys that changed.
import type { BatchContext, Collector, Key, ProcessContext, RuntimeContext, StreamRecord, WatermarkContext } from "../../core/api";
import { ValueWriter } from "../../core/snapshot-codec";
import { ChangeReportingSlotTableView, growColumn, KeySlots } from "../../core/state";
import { divertFromWindow, type AggregateFunction, type Slot } from "./aggregate";
import { floorMod, floorTo, SliceAssigner } from "./assigners";
import { partialRecord } from "./combine";
import { F, HEADER, LOOKUP_CHUNK, T, type SliceState } from "./slice-state";
import { cleanupTime, NO_TIME } from "./trigger";

/** formAll()'s stored forms: each live slot's [T, F, start, count, …] at `at[slot]` in `values`. */
interface FlatForms {
  at: Int32Array;
  values: Float64Array;
}

/** Column.olderGap's mark for a gap of 2^31 − 1 slices or more, kept exactly aside. */
const FAR_GAP = 0x7fffffff;

/** storedForm builds every key's form at once past this many keys asked for (or a 16th of the keys). */
const FORM_ALL_AFTER = 256;

/** Purged columns kept for reuse: a few slides' worth. */
const SPARE_COLUMNS = 4;

/** A cell's older link when the key has no older cell. */
const NONE = -1;

/**
 * One slice of every key that has records in it, as a list of cells: the key's slot, its records
 * (n) and, for `count(field)`, the count itself (acc). A list rather than an array indexed by slot,
 * so that memory follows the cells present: over 10 M rarely active cards a minute's column holds the
 * cards seen in that minute, not 10 M zeros. Each cell links to its key's next older cell (how many
 * slices older, and its position there), so a key's cells read newest first without an index: in-order records go to the newest
 * (SliceColumns.newestPos), a late record or a snapshot walks the few links back.
 */
class Column {
  start: number;
  slots: Int32Array;
  n: Float64Array;
  acc: Float64Array | undefined;
  /** The key's older cell: how many slices older (FAR: see `far`), and its position there (NONE: no older cell). */
  private olderGap: Int32Array;
  olderPos: Int32Array;
  /** The older cell's start where the gap does not fit an int32 (a clock-skewed record years ahead), by position. */
  private far: Map<number, number> | undefined;
  size = 0;

  constructor(
    start: number,
    /** The slice length: starts are its multiples. */
    private readonly step: number,
    withAcc: boolean,
    capacity: number,
  ) {
    this.start = start;
    this.slots = new Int32Array(capacity);
    this.n = new Float64Array(capacity);
    this.acc = withAcc ? new Float64Array(capacity) : undefined;
    this.olderGap = new Int32Array(capacity);
    this.olderPos = new Int32Array(capacity);
  }

  /** A new cell for slot holding `records` records counting `value`, linked to the key's older cell; returns its position. */
  append(slot: number, records: number, value: number, olderStart: number, olderPos: number): number {
    const i = this.size;
    if (i === this.slots.length) this.grow();
    this.slots[i] = slot;
    this.n[i] = records;
    if (this.acc !== undefined) this.acc[i] = value;
    this.size = i + 1;
    this.link(i, olderStart, olderPos);
    return i;
  }

  /** Links cell i to its key's older cell, at olderPos in the column starting at olderStart (NONE: no older cell). */
  link(i: number, olderStart: number, olderPos: number): void {
    this.olderPos[i] = olderPos;
    if (olderPos === NONE) return;
    const gap = (this.start - olderStart) / this.step;
    if (gap < FAR_GAP) this.olderGap[i] = gap;
    else {
      this.olderGap[i] = FAR_GAP;
      (this.far ??= new Map()).set(i, olderStart);
    }
  }

  /** The start of the column holding cell i's older cell (meaningful when olderPos[i] is not NONE). */
  olderStart(i: number): number {
    const gap = this.olderGap[i] as number;
    return gap === FAR_GAP ? (this.far?.get(i) as number) : this.start - gap * this.step;
  }

  /** Empties a purged column to serve as slice `start`, keeping its arrays. */
  reuse(start: number): Column {
    this.start = start;
    this.size = 0;
    this.far = undefined;
    return this;
  }

  private grow(): void {
    this.resize(2 * this.slots.length);
  }

  private resize(cap: number): void {
    const grown = <A extends Int32Array | Float64Array>(a: A, b: A): A => {
      b.set(a.subarray(0, this.size));
      return b;
    };
    this.slots = grown(this.slots, new Int32Array(cap));
    this.n = grown(this.n, new Float64Array(cap));
    if (this.acc !== undefined) this.acc = grown(this.acc, new Float64Array(cap));
    this.olderGap = grown(this.olderGap, new Int32Array(cap));
    this.olderPos = grown(this.olderPos, new Int32Array(cap));
  }

  bytes(): number {
    return this.slots.byteLength + this.n.byteLength + (this.acc?.byteLength ?? 0) + this.olderGap.byteLength + this.olderPos.byteLength;
  }
}

const compareKeys = (a: Key, b: Key): number => (a < b ? -1 : a > b ? 1 : 0);

/** The columnar view the heap backend snapshots and counts: a key's value is its slices in stored form, built on demand. */
class ColumnsView extends ChangeReportingSlotTableView {
  override get size(): number {
    return this.slots.size;
  }
  override has(key: Key): boolean {
    return this.slots.find(key) >= 0;
  }
  override *keys(): IterableIterator<Key> {
    for (const s of this.slots.slots()) yield this.slots.keyAt(s) as Key;
  }
  /** One per key: its next firing or purge (the stored form's timer). */
  impliedTimerCount(): number {
    return this.slots.size;
  }
}

export class SliceColumns {
  private readonly slots = new KeySlots();
  private readonly view: ColumnsView;
  private readonly assigner: SliceAssigner;
  private readonly size: number;
  private readonly slide: number;
  /** count(field): a column's acc differs from its n; plain count: the value is n. */
  private readonly withAcc: boolean;
  /** Live columns, by start ascending. */
  private columns: Column[] = [];
  /** Purged columns, whose arrays the next new ones reuse: a slide's column is as big as the last, and growing it anew each slide made its garbage (off-heap, but counted towards collections). */
  private readonly spare: Column[] = [];
  /** The column the last record went to: in-order records hit it again. */
  private recent: Column | undefined;

  // ---- per slot, grown with the slots' capacity
  /** Records in the slices of the window being built: those starting in [L + slide − size, L). */
  private totalN: Float64Array = new Float64Array(0);
  private totalAcc: Float64Array = new Float64Array(0);
  /** The key's last firing (the stored form's F): its windows ending by F + 1 have fired. */
  private fired: Float64Array = new Float64Array(0);
  /** The start of the key's newest slice (NO_TIME: none), and its cell there: where in-order records go. */
  private newestStart: Float64Array = new Float64Array(0);
  private newestPos: Int32Array = new Int32Array(0);
  /** Columns holding the key's records: at 0 its slot is freed. */
  private cells: Int32Array = new Int32Array(0);
  /** Whether the slot is in `active` or `fresh`. */
  private listed: Uint8Array = new Uint8Array(0);

  /** The keys with records in the window being built, sorted by key: the next window end's firing order. */
  private active = new Int32Array(16);
  private activeCount = 0;
  /** Keys given records in that window since the last firing, not yet merged into `active`. */
  private fresh = new Int32Array(16);
  private freshCount = 0;
  private merged = new Int32Array(16);

  /** L: every window ending by L has fired (L = the last window end at or before watermark + 1 once a watermark passed). */
  private lastEnd = Number.NEGATIVE_INFINITY;

  // ---- scratch
  private readonly chunkKeys: Key[] = [];
  private hashes = new Int32Array(LOOKUP_CHUNK);
  private homes = new Int32Array(LOOKUP_CHUNK);
  private touched = 0;
  private readonly scratch: Slot[] = [0];
  /** fireAgain's copy of a key's cells. */
  private readonly cellStarts: number[] = [];
  private readonly cellValues: number[] = [];
  /** formAll()'s forms while the state is unchanged, and the stored forms asked for since it last changed. */
  private formed: FlatForms | undefined;
  private formedCalls = 0;
  /** Checkpoints write the stored forms with it, straight from formAll()'s buffer. */
  private readonly writer = new ValueWriter();

  constructor(
    name: string,
    adopt: NonNullable<RuntimeContext["adoptState"]>,
    private readonly nodeId: string,
    sizeMs: number,
    slideMs: number,
    private readonly agg: AggregateFunction,
    private readonly allowedLatenessMs: number,
    private readonly partial: boolean,
    countsField: boolean,
    /** The operator's watermark at open (a restored snapshot's). */
    watermark: number,
  ) {
    this.assigner = new SliceAssigner(sizeMs, slideMs);
    this.size = sizeMs;
    this.slide = slideMs;
    this.withAcc = countsField;
    this.view = adopt(new ColumnsView(name, "value", this.slots, (s) => this.storedForm(s), (entries) => this.load(entries), () => this.bytes(), (s) => this.packStored(s)));
    // Restored keys (adopt loads them) count towards the window being built at this watermark.
    this.rebuild(watermark);
  }

  // ---- records

  processBatch(records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void {
    const keys = this.chunkKeys;
    for (let f = from; f < to; f += LOOKUP_CHUNK) {
      const n = Math.min(to, f + LOOKUP_CHUNK) - f;
      for (let i = 0; i < n; i++) keys[i] = (records[f + i] as StreamRecord).key as Key;
      this.touched = this.slots.prefetch(keys, n, this.hashes, this.homes);
      for (let i = 0; i < n; i++) {
        const r = records[f + i] as StreamRecord;
        ctx.enter(r);
        this.process(r, ctx, this.hashes[i] as number);
      }
    }
  }

  /** One record; `hash` is its key's hashKey() when a chunk computed it, else NaN. */
  process(record: StreamRecord, ctx: ProcessContext, hash = Number.NaN): void {
    if (this.formedCalls !== 0) this.stateChanged();
    const a = this.assigner;
    const s = a.sliceStart(record.timestamp);
    const lastEnd = a.lastEnd(s);
    const wm = ctx.timerService.currentWatermark();
    // Late for every window it belongs to when the last of them is already purged.
    const input = cleanupTime(lastEnd, this.allowedLatenessMs) <= wm ? undefined : this.agg.input(record.value);
    // `typeof`, not `instanceof Invalid`: see AggregateFunction.input.
    if (input === undefined || typeof input === "object") {
      divertFromWindow(record.value, ctx, this.nodeId, input);
      return;
    }
    const key = ctx.key as Key;
    const slot = Number.isNaN(hash) ? this.slots.findOrAdd(key) : this.slots.findOrAddHashed(key, hash);
    if (this.slots.added) this.grow();
    const value = input as number;
    if (this.newestStart[slot] === s) {
      // The usual case, kept here rather than in count(): a call would box s, a double, per record.
      const c = this.recent !== undefined && this.recent.start === s ? this.recent : this.columnAt(s);
      const i = this.newestPos[slot] as number;
      c.n[i] = (c.n[i] as number) + 1;
      if (c.acc !== undefined) c.acc[i] = (c.acc[i] as number) + value;
    } else this.count(slot, s, value);
    this.view.changed(key);
    const L = this.lastEnd;
    if (s >= L) return; // in no window that has fired: the firing at its first end counts it
    if (s >= L + this.slide - this.size) this.addToTotals(slot, 1, value);
    // Some windows of this slice have fired: fire again those not yet purged (as the key-major
    // storage, with the window's count summed from its columns).
    const firstUnpurged = wm + 2 - this.allowedLatenessMs; // cleanupTime(e) > wm  <=>  e >= wm + 2 - lateness
    let e = firstUnpurged + floorMod(this.size - firstUnpurged, this.slide);
    const firstEnd = a.firstEnd(s);
    if (e < firstEnd) e = firstEnd;
    if (e <= lastEnd && e - 1 <= wm) this.fireAgain(slot, key, e, Math.min(lastEnd, e + floorTo(wm + 1 - e, this.slide)), ctx);
    if (wm > (this.fired[slot] as number)) this.fired[slot] = wm;
  }

  /** Emits again the key's windows ending from `first` to `last` (every slide): a late record changed them. */
  private fireAgain(slot: number, key: Key, first: number, last: number, ctx: Collector): void {
    // The key's cells read once (a walk of its links), then each window summed from them.
    const starts = this.cellStarts;
    const values = this.cellValues;
    let n = 0;
    this.eachCell(slot, (start, value) => {
      if (start >= last) return;
      starts[n] = start;
      values[n++] = value;
    });
    for (let e = first; e <= last; e += this.slide) {
      let v = 0;
      for (let j = 0; j < n; j++) {
        const start = starts[j] as number;
        if (start < e && start >= e - this.size) v += values[j] as number;
      }
      this.emitWindow(ctx, key, e, v);
    }
  }

  /** Adds a record of slice s counting `value` to slot's cell there, which is not the key's newest. */
  private count(slot: number, s: number, value: number): void {
    const newest = this.newestStart[slot] as number;
    const newestPos = this.newestPos[slot] as number;
    this.cells[slot] = (this.cells[slot] as number) + 1;
    if (newest < s) {
      // A newer slice (NO_TIME < s: or the key's first): a new newest cell, linked to the old one.
      this.newestPos[slot] = this.columnAt(s).append(slot, 1, value, newest, newest === NO_TIME ? NONE : newestPos);
      this.newestStart[slot] = s;
      return;
    }
    // An older slice: walk the key's cells back to it, or to where it goes.
    let c = this.columnAt(newest);
    let i = newestPos;
    for (;;) {
      const olderPos = c.olderPos[i] as number;
      const olderStart = olderPos === NONE ? NO_TIME : this.olderStart(c, i, slot);
      const older = olderPos === NONE ? undefined : this.liveColumn(olderStart);
      if (older !== undefined && olderStart === s) {
        older.n[olderPos] = (older.n[olderPos] as number) + 1;
        if (older.acc !== undefined) older.acc[olderPos] = (older.acc[olderPos] as number) + value;
        this.cells[slot] = (this.cells[slot] as number) - 1;
        return;
      }
      if (older === undefined || olderStart < s) {
        const at = this.columnAt(s).append(slot, 1, value, older === undefined ? NO_TIME : olderStart, older === undefined ? NONE : olderPos);
        c.link(i, s, at);
        return;
      }
      c = older;
      i = olderPos;
    }
  }

  /** The start of the column of slot's cell older than cell i of c, which must be older than c: a link that is not would loop a walk forever. */
  private olderStart(c: Column, i: number, slot: number): number {
    const start = c.olderStart(i);
    if (!(start < c.start)) throw this.outOfStep(`key ${JSON.stringify(this.slots.keyAt(slot))}'s slices link from ${c.start} to ${start}`);
    return start;
  }

  /** The column starting at s, if it is live (links to purged columns are dead: every purged start is older than every live one). */
  private liveColumn(s: number): Column | undefined {
    const c = this.columns[this.firstColumnFrom(s)];
    return c !== undefined && c.start === s ? c : undefined;
  }

  /** Calls fn(start, value) for each of slot's live cells, newest first. */
  private eachCell(slot: number, fn: (start: number, value: number) => void): void {
    let start = this.newestStart[slot] as number;
    let i = this.newestPos[slot] as number;
    while (i !== NONE) {
      const c = this.liveColumn(start);
      if (c === undefined) return;
      fn(start, (c.acc ?? c.n)[i] as number);
      const older = c.olderPos[i] as number;
      if (older !== NONE) start = this.olderStart(c, i, slot);
      i = older;
    }
  }

  private addToTotals(slot: number, records: number, value: number): void {
    this.totalN[slot] = (this.totalN[slot] as number) + records;
    if (this.withAcc) this.totalAcc[slot] = (this.totalAcc[slot] as number) + value;
    if (this.listed[slot] === 0) this.enlist(slot);
  }

  private enlist(slot: number): void {
    this.listed[slot] = 1;
    if (this.freshCount === this.fresh.length) {
      const grown = new Int32Array(2 * this.freshCount);
      grown.set(this.fresh);
      this.fresh = grown;
    }
    this.fresh[this.freshCount++] = slot;
  }

  /** The column of slice s, created (in start order) when missing. */
  private columnAt(s: number): Column {
    const r = this.recent;
    if (r !== undefined && r.start === s) return r;
    const cols = this.columns;
    const lo = this.firstColumnFrom(s);
    let c = cols[lo];
    if (c === undefined || c.start !== s) {
      // The slice after the newest: sized as the newest and an eighth, since slices of a steady stream
      // hold about as many keys. Any other (a late or far-future record's) starts small.
      const newest = cols[cols.length - 1];
      const size = newest !== undefined && s > newest.start && s - newest.start <= this.slide ? newest.size : 0;
      // A purged column's arrays go to the next slice only: not to an outlier, which may keep them for years.
      c = (size > 0 ? this.spare.pop()?.reuse(s) : undefined) ?? new Column(s, this.assigner.step, this.withAcc, Math.max(16, size + (size >>> 3)));
      cols.splice(lo, 0, c);
    }
    this.recent = c;
    return c;
  }

  /** Index of the first column starting at or after s. */
  private firstColumnFrom(s: number): number {
    const cols = this.columns;
    let lo = 0;
    let hi = cols.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cols[mid] as Column).start < s) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Emits window [end − size, end) of `key`: its count, or (stage 1 of a two-stage aggregation) its accumulator. */
  private emitWindow(out: Collector, key: Key, end: number, value: number): void {
    const start = end - this.size;
    if (this.partial) {
      this.scratch[0] = value;
      out.output(partialRecord(key, start, end, this.agg, this.scratch), end - 1);
    } else out.output({ key, windowStart: start, windowEnd: end, value }, end - 1);
  }

  // ---- firing

  /** Fires every window ending by watermark + 1, in end order and within an end in key order, then purges. */
  onWatermark(wm: number, ctx: WatermarkContext): void {
    if (this.formedCalls !== 0) this.stateChanged();
    for (;;) {
      let e: number;
      if (this.activeCount + this.freshCount > 0) {
        e = this.lastEnd + this.slide;
        // Listed keys have records in the slices the next window shares with the last: a broken count
        // would otherwise fire forever at +∞.
        const shared = this.columns[this.firstColumnFrom(e - this.size)];
        if (shared === undefined || shared.start >= this.lastEnd) throw this.outOfStep(`keys are listed for the window ending ${e} but none of its fired slices is kept`);
      } else {
        // Nothing in the window being built: jump to the first window of the oldest unfired slice.
        const c = this.columns[this.firstColumnFrom(this.lastEnd)];
        if (c === undefined) break;
        e = this.assigner.firstEnd(c.start);
        if (!(e > this.lastEnd && e > c.start)) throw this.outOfStep(`the slice at ${c.start} has no window ending after ${this.lastEnd}`);
      }
      if (e - 1 > wm) break;
      this.fireAt(e, ctx);
    }
    const L = this.endAtOrBefore(wm + 1);
    if (L > this.lastEnd) this.lastEnd = L;
    this.purge(wm);
  }

  /** An internal invariant broke: an error naming the node, rather than a loop that never ends. */
  private outOfStep(what: string): Error {
    return new Error(`node "${this.nodeId}": window state out of step: ${what}`);
  }

  /** The last window end at or before t (ends are k·slide + size). */
  private endAtOrBefore(t: number): number {
    if (!Number.isFinite(t)) return t;
    return floorTo(t - this.size, this.slide) + this.size;
  }

  /**
   * Builds window `end` from the one before (L): adds the slices [L, end), emits, takes out those the
   * next window leaves. In steps of one loop each: as one function, compiled while its emission loop
   * ran, it deoptimized after that loop at most firings (no feedback for what followed).
   */
  private fireAt(end: number, ctx: WatermarkContext): void {
    const L = this.lastEnd;
    this.foldRange(L, end, 1);
    this.mergeFresh();
    const n = this.activeCount;
    this.emitListed(end, n, ctx);
    // The slices in [L + slide − size, end + slide − size) are in no later window.
    this.foldRange(L + this.slide - this.size, end + this.slide - this.size, -1);
    this.activeCount = this.keepListed(n);
    this.lastEnd = end;
  }

  /** Emits window `end` for the first n listed keys, in list (key) order. */
  private emitListed(end: number, n: number, ctx: WatermarkContext): void {
    const act = this.active;
    for (let k = 0; k < n; k++) {
      const slot = act[k] as number;
      const key = this.slots.keyAt(slot) as Key;
      this.emitWindow(ctx.forKey(key), key, end, this.withAcc ? (this.totalAcc[slot] as number) : (this.totalN[slot] as number));
      this.fired[slot] = end - 1;
      this.view.changed(key);
    }
  }

  /** Keeps listed, of the first n, the keys with records in the window being built; returns how many. */
  private keepListed(n: number): number {
    const act = this.active;
    const totalN = this.totalN;
    let kept = 0;
    for (let k = 0; k < n; k++) {
      const slot = act[k] as number;
      if ((totalN[slot] as number) > 0) act[kept++] = slot;
      else this.listed[slot] = 0;
    }
    return kept;
  }

  /** fold()s every column starting in [from, to). */
  private foldRange(from: number, to: number, sign: number): void {
    const cols = this.columns;
    for (let i = this.firstColumnFrom(from); i < cols.length && (cols[i] as Column).start < to; i++) this.fold(cols[i] as Column, sign);
  }

  /** Adds column c's cells to its keys' totals (sign -1: takes them out), listing the keys it adds. */
  private fold(c: Column, sign = 1): void {
    const slots = c.slots;
    const n = c.n;
    const acc = c.acc;
    const totalN = this.totalN;
    for (let j = 0; j < c.size; j++) {
      const slot = slots[j] as number;
      totalN[slot] = (totalN[slot] as number) + sign * (n[j] as number);
      if (acc !== undefined) this.totalAcc[slot] = (this.totalAcc[slot] as number) + sign * (acc[j] as number);
      if (sign > 0 && this.listed[slot] === 0) this.enlist(slot);
    }
  }

  /** Sorts the fresh keys and merges them into `active`. */
  private mergeFresh(): void {
    const m = this.freshCount;
    if (m === 0) return;
    const keyOf = (s: number): Key => this.slots.keyAt(s) as Key;
    const fresh = Array.from(this.fresh.subarray(0, m)).sort((x, y) => compareKeys(keyOf(x), keyOf(y)));
    this.freshCount = 0;
    const n = this.activeCount;
    if (this.merged.length < n + m) this.merged = new Int32Array(2 * (n + m));
    const out = this.merged;
    const act = this.active;
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < n && j < m) {
      const a = act[i] as number;
      const b = fresh[j] as number;
      if (compareKeys(keyOf(a), keyOf(b)) <= 0) {
        out[k++] = a;
        i++;
      } else {
        out[k++] = b;
        j++;
      }
    }
    while (i < n) out[k++] = act[i++] as number;
    while (j < m) out[k++] = fresh[j++] as number;
    this.merged = act.length >= out.length ? act : new Int32Array(out.length);
    this.active = out;
    this.activeCount = k;
  }

  /** Drops the columns whose last window is past its allowed lateness; frees the keys left with none. */
  private purge(wm: number): void {
    const cols = this.columns;
    let dropped = 0;
    for (; dropped < cols.length; dropped++) {
      const c = cols[dropped] as Column;
      const cleanup = cleanupTime(this.assigner.lastEnd(c.start), this.allowedLatenessMs);
      if (cleanup > wm) break;
      for (let j = 0; j < c.size; j++) {
        const slot = c.slots[j] as number;
        const key = this.slots.keyAt(slot) as Key;
        this.view.changed(key);
        const left = (this.cells[slot] as number) - 1;
        this.cells[slot] = left;
        if (left === 0) {
          // Its last slice left every window: the totals hold none of it, and it is not listed.
          this.fired[slot] = NO_TIME;
          this.newestStart[slot] = NO_TIME;
          this.slots.delete(slot);
        } else if (cleanup > (this.fired[slot] as number)) {
          // As the key-major storage, whose timer fires at the purge of the key's oldest slice.
          this.fired[slot] = cleanup;
        }
      }
      if (c === this.recent) this.recent = undefined;
      if (this.spare.length < SPARE_COLUMNS) this.spare.push(c);
    }
    if (dropped > 0) cols.splice(0, dropped);
  }

  // ---- restore, snapshot, size

  /** At open, after a restore: the totals and the firing list of the window being built, from the columns. */
  private rebuild(wm: number): void {
    this.lastEnd = this.endAtOrBefore(wm + 1);
    this.totalN.fill(0);
    this.totalAcc.fill(0);
    this.listed.fill(0);
    this.activeCount = 0;
    this.freshCount = 0;
    this.foldRange(this.lastEnd + this.slide - this.size, this.lastEnd, 1);
  }

  private grow(): void {
    const cap = this.slots.capacity;
    if (this.fired.length >= cap) return;
    this.totalN = growColumn(this.totalN, cap, 1);
    if (this.withAcc) this.totalAcc = growColumn(this.totalAcc, cap, 1);
    this.fired = growColumn(this.fired, cap, 1, NO_TIME);
    this.newestStart = growColumn(this.newestStart, cap, 1, NO_TIME);
    this.newestPos = growColumn(this.newestPos, cap, 1);
    this.cells = growColumn(this.cells, cap, 1);
    this.listed = growColumn(this.listed, cap, 1);
  }

  /** The key's slices as the key-major storage keeps them ([timer, last firing, start, acc, …], newest first). */
  private storedForm(slot: number): SliceState | undefined {
    if (this.slots.keyAt(slot) === undefined) return undefined;
    let st: SliceState;
    if (this.formed === undefined && ++this.formedCalls <= Math.max(FORM_ALL_AFTER, this.slots.size >>> 4)) {
      st = [NO_TIME, this.fired[slot] as number];
      this.eachCell(slot, (start, value) => st.push(start, value));
      st[T] = this.timerOf(st, 0, st.length);
    } else {
      // Most keys changed (a checkpoint after a slide fired them all): every key's form in one pass
      // over the lists, reading them in order, rather than a walk of each key's links, a cache miss
      // per cell (a checkpoint of 100 k keys x 30 slices: 1.8 s walked).
      const { at, values } = this.formed ?? this.formAll();
      const from = at[slot] as number;
      st = Array.from(values.subarray(from, from + HEADER + 2 * (this.cells[slot] as number)));
    }
    return st;
  }

  /**
   * The key-major timer of the form in values[from, end): the next window holding data after the
   * last firing, or the purge of the oldest slice.
   */
  private timerOf(values: ArrayLike<unknown>, from: number, end: number): number {
    let need = cleanupTime(this.assigner.lastEnd(values[end - 2] as number), this.allowedLatenessMs);
    const next = this.assigner.nextEnd(values, from + HEADER, 2, (values[from + F] as number) + 1, end);
    if (next !== undefined && next - 1 < need) need = next - 1;
    return need;
  }

  /**
   * The slot's stored form packed from formAll()'s buffer (the bytes msgpackr gives for
   * storedForm's array), once a checkpoint asked for enough keys to build it; before, undefined
   * (the snapshot packs get()'s, storedForm's array, which counts towards building it).
   */
  private packStored(slot: number): Uint8Array | undefined {
    const formed = this.formed;
    if (formed === undefined || this.slots.keyAt(slot) === undefined) return undefined;
    const from = formed.at[slot] as number;
    return this.writer.numberArray(formed.values, from, from + HEADER + 2 * (this.cells[slot] as number));
  }

  /**
   * Every live key's stored form, timer included, in one buffer (at: each slot's offset), kept until
   * the state next changes (stateChanged()). A buffer rather than an array per key: 100 k arrays
   * of ~60 numbers were a third of a checkpoint's time to build and collect.
   */
  private formAll(): FlatForms {
    const cap = this.slots.capacity;
    const at = new Int32Array(cap);
    let total = 0;
    for (let slot = 0; slot < cap; slot++) {
      if (this.slots.keyAt(slot) === undefined) continue;
      at[slot] = total;
      total += HEADER + 2 * (this.cells[slot] as number);
    }
    const values = new Float64Array(total);
    // Each form filled newest slice first at a cursor, from the lists newest first.
    const cursor = new Int32Array(cap);
    for (let slot = 0; slot < cap; slot++) {
      if (this.slots.keyAt(slot) === undefined) continue;
      const from = at[slot] as number;
      values[from + F] = this.fired[slot] as number;
      cursor[slot] = from + HEADER;
    }
    const cols = this.columns;
    for (let k = cols.length - 1; k >= 0; k--) {
      const c = cols[k] as Column;
      const counts = c.acc ?? c.n;
      for (let j = 0; j < c.size; j++) {
        const slot = c.slots[j] as number;
        const i = cursor[slot] as number;
        values[i] = c.start;
        values[i + 1] = counts[j] as number;
        cursor[slot] = i + 2;
      }
    }
    for (let slot = 0; slot < cap; slot++) {
      if (this.slots.keyAt(slot) === undefined) continue;
      const from = at[slot] as number;
      if (cursor[slot] !== from + HEADER + 2 * (this.cells[slot] as number)) throw new Error(`node "${this.nodeId}": window state out of step (key ${JSON.stringify(this.slots.keyAt(slot))} lists ${(cursor[slot] as number - from - HEADER) / 2} cells, counts ${this.cells[slot]})`);
      values[from + T] = this.timerOf(values, from, cursor[slot] as number);
    }
    this.formed = { at, values };
    return this.formed;
  }

  /** The state changes: stored forms built for a snapshot are stale. */
  private stateChanged(): void {
    this.formed = undefined;
    this.formedCalls = 0;
  }

  /** Restored keys (a fresh table, at open): their slices into the columns; rebuild() then counts the totals. */
  private load(entries: ReadonlyArray<readonly [Key, unknown]>): void {
    this.stateChanged();
    for (const [key, stored] of entries) {
      const st = stored as SliceState;
      const slot = this.slots.findOrAdd(key);
      if (this.slots.added) this.grow();
      this.fired[slot] = st[F] as number;
      // Oldest first, so that the newest is the key's newest cell.
      for (let j = st.length - 2; j >= HEADER; j -= 2) {
        const start = st[j] as number;
        const acc = st[j + 1] as number;
        // A count(field) slice holds records even at 0: one record stands for them (only n > 0 is read).
        const newest = this.newestStart[slot] as number;
        this.newestPos[slot] = this.columnAt(start).append(slot, this.withAcc ? 1 : acc, acc, newest, newest === NO_TIME ? NONE : (this.newestPos[slot] as number));
        this.newestStart[slot] = start;
        this.cells[slot] = (this.cells[slot] as number) + 1;
      }
    }
  }

  private bytes(): number {
    let b = this.slots.bytes() + this.fired.byteLength * (this.withAcc ? 4 : 3) + this.newestPos.byteLength + this.cells.byteLength + this.listed.byteLength + 4 * (this.active.length + this.fresh.length + this.merged.length);
    for (const c of this.columns) b += c.bytes();
    for (const c of this.spare) b += c.bytes();
    return b;
  }
}
