// The window operator for tumbling and hopping windows (Flink SQL's SlicingWindowOperator): per
// key, one accumulator per non-empty slice, one event-time timer at the key's next firing or
// purge, and window results merged from slices when they fire.
//
// Vocabulary: a *slice* is a gcd(size, slide)-long bucket of one key's records, the unit of state;
// a *window* [end − size, end) covers size ÷ step consecutive slices; it *fires* when the watermark
// reaches end − 1 and is *purged* at end − 1 + allowedLateness (trigger.ts).
import { valueState, type BatchContext, type Key, type Operator, type ProcessContext, type RuntimeContext, type StreamRecord, type TimerFiring, type ValueState, type WatermarkContext } from "../../core/api";
import type { ImpliedTimers } from "../../core/spec";
import type { FiresTimerBatches, TimerBatch } from "../../core/timers";
import { aggregateFunction, divertFromWindow, type AggregateFunction, type AggregateParams, type Slot } from "./aggregate";
import { floorMod, SliceAssigner } from "./assigners";
import { partialRecord } from "./combine";
import { RunningTotals } from "./running-totals";
import { SliceColumns } from "./slice-columns";
import { F, HEADER, LOOKUP_CHUNK, T, type SliceState } from "./slice-state";
import { SliceTable } from "./slice-table";
import { cleanupTime, NO_TIME, WINDOW_TIMER } from "./trigger";

/** Up to this many slots a key's array is reallocated at its exact size when it changes. */
const COMPACT_UP_TO = 16;

/**
 * Running totals (running-totals.ts) from this many slices per window: below it a merge is as
 * quick as keeping them (tumbling and Nexmark q5's 10 s / 2 s ran up to 6 % slower with them).
 */
const TOTALS_FROM_SLICES = 8;

/**
 * Whether the heap keeps this window's slices by time (slice-columns.ts: a list of per-key counts per
 * slice, and the operator's own firing) rather than per key: for counts, at any number of slices per
 * window (tumbling ran 5–15 % faster so too, q5 1.5×, the 1-hour hop 2.7×).
 */
export const keepsSliceColumns = (aggregate: AggregateParams): boolean => aggregate.op === "count";

export const SLICES_STATE = valueState<SliceState>("slices");

/**
 * The window specs' impliedTimers: where the heap keeps the slices by time, it fires them from
 * the watermark and registers no timer; each key's is implied by its stored slices (their first slot).
 */
export function sliceColumnsTimers(aggregate: AggregateParams): ImpliedTimers | undefined {
  if (!keepsSliceColumns(aggregate)) return undefined;
  return { state: SLICES_STATE.name, namespaces: [WINDOW_TIMER], of: (_key, stored) => ((stored as SliceState)[T] === NO_TIME ? [] : [[(stored as SliceState)[T] as number, WINDOW_TIMER]]) };
}

const at = (st: SliceState, i: number): number => st[i] as number;

export class SlicedWindowOperator implements Operator, FiresTimerBatches {
  // ---- configuration
  private readonly assigner: SliceAssigner;
  private readonly agg: AggregateFunction;
  private readonly size: number;
  private readonly slide: number;
  /** Slots per slice: its start plus the accumulator. */
  private readonly stride: number;
  // ---- scratch, not checkpointed
  private readonly scratch: Slot[];
  /** A slice's worth of zeros (stride slots), never written: what a new slice is grown from. */
  private readonly pad: Slot[];
  /** The pad without its first slot (the slice start): what a splice inserts after it. */
  private readonly padTail: Slot[];
  /** processBatch's and onEventTimers' chunk: its keys, and their slots as SliceTable.lookUp finds them. */
  private readonly chunkKeys: Key[] = [];
  private readonly slotOf = new Int32Array(LOOKUP_CHUNK);
  /** What loadFound read, kept so that the compiler keeps the reads. */
  private touched = 0;
  // ---- keyed state (checkpointed by the engine)
  /**
   * On a backend that adopts tables (the heap), the state by slot, looked up a chunk at a time and
   * changed in place; otherwise undefined, and `state`, the generic handle, written back on change.
   */
  private table: SliceTable | undefined;
  /** On the heap, for counts (keepsSliceColumns): the slices by time, fired by onWatermark. */
  private columns: SliceColumns | undefined;
  private state!: ValueState<SliceState>;

  constructor(
    private readonly nodeId: string,
    sizeMs: number,
    slideMs: number,
    private readonly aggregate: AggregateParams,
    private readonly allowedLatenessMs: number,
    /** Stage 1 of a two-stage aggregation: emit the mergeable accumulator (see combine.ts). */
    private readonly partial = false,
  ) {
    // The params schema refuses slide > size (window.hopping.ts says why): every record is then in
    // at least one window, so none can be dropped for falling in a gap.
    if (slideMs > sizeMs) throw new Error(`node "${nodeId}": slideMs (${slideMs}) must not exceed sizeMs (${sizeMs}): records between the windows would be in none`);
    this.assigner = new SliceAssigner(sizeMs, slideMs);
    this.agg = aggregateFunction(aggregate);
    this.size = sizeMs;
    this.slide = slideMs;
    this.stride = 1 + this.agg.width;
    this.scratch = new Array<Slot>(this.agg.width).fill(0);
    this.pad = new Array<Slot>(this.stride).fill(0);
    this.padTail = this.pad.slice(1);
  }

  open(ctx: RuntimeContext): void {
    if (ctx.adoptState !== undefined && keepsSliceColumns(this.aggregate)) {
      this.columns = new SliceColumns(SLICES_STATE.name, ctx.adoptState, this.nodeId, this.size, this.slide, this.agg, this.allowedLatenessMs, this.partial, this.aggregate.field !== undefined, ctx.currentWatermark());
    } else if (ctx.adoptState !== undefined) {
      const slicesPerWindow = this.size / this.assigner.step;
      const totals = this.agg.additive && slicesPerWindow >= TOTALS_FROM_SLICES ? new RunningTotals(this.agg.width, this.stride, HEADER) : undefined;
      this.table = new SliceTable(SLICES_STATE.name, ctx.adoptState, totals);
    }
    else this.state = ctx.getValueState(SLICES_STATE);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    if (this.columns !== undefined) this.columns.process(record, ctx);
    else this.process(record, ctx, -1);
  }

  onWatermark(watermark: number, ctx: WatermarkContext): void {
    this.columns?.onWatermark(watermark, ctx);
  }

  /**
   * On the heap, chunk by chunk: every record's slot and state first, then the records in order,
   * so that the lookups (cache misses over 100 k keys) overlap. A slot looked up here is still the
   * key's when its record comes: processElement never deletes one, and a key that had none is
   * looked up again (an earlier record of the chunk may have added it).
   */
  processBatch(records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void {
    if (this.columns !== undefined) {
      this.columns.processBatch(records, from, to, ctx);
      return;
    }
    if (this.table === undefined) {
      for (let i = from; i < to; i++) {
        const r = records[i] as StreamRecord;
        ctx.enter(r);
        this.process(r, ctx, -1);
      }
      return;
    }
    for (let f = from; f < to; f += LOOKUP_CHUNK) this.lookUpThenProcess(this.table, records, f, Math.min(to, f + LOOKUP_CHUNK), ctx);
  }

  private lookUpThenProcess(table: SliceTable, records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void {
    const keys = this.chunkKeys;
    const slotOf = this.slotOf;
    const n = to - from;
    for (let i = 0; i < n; i++) keys[i] = (records[from + i] as StreamRecord).key as Key;
    table.lookUp(keys, n, slotOf);
    this.loadFound(table, n, false);
    for (let i = 0; i < n; i++) {
      const r = records[from + i] as StreamRecord;
      ctx.enter(r);
      this.process(r, ctx, slotOf[i] as number);
    }
  }

  /**
   * Reads the arrays of slotOf[0, n), a stage of independent loads: their lengths (header and
   * elements pointer), then the elements a record or a firing reads first: the newest slice's
   * start (what a record updates) or, for a firing, the head (the key's timer and last firing)
   * and the oldest slice (where the merge starts, and what is purged).
   */
  private loadFound(table: SliceTable, n: number, oldest: boolean): void {
    const rows = table.rows;
    const slotOf = this.slotOf;
    let touched = 0;
    for (let i = 0; i < n; i++) {
      const slot = slotOf[i] as number;
      if (slot >= 0) touched += (rows[slot] as SliceState).length;
    }
    for (let i = 0; i < n; i++) {
      const slot = slotOf[i] as number;
      if (slot < 0) continue;
      const st = rows[slot] as SliceState;
      touched += oldest ? at(st, F) + at(st, st.length - 1) : at(st, HEADER);
    }
    this.touched = touched;
  }

  /** processElement, given the key's slot when it was looked up already (else -1; ignored off the heap). */
  private process(record: StreamRecord, ctx: ProcessContext, knownSlot: number): void {
    const a = this.assigner;
    const lateness = this.allowedLatenessMs;
    const s = a.sliceStart(record.timestamp);
    const lastEnd = a.lastEnd(s);
    const firstEnd = a.firstEnd(s);
    const wm = ctx.timerService.currentWatermark();
    // Late for every window it belongs to when the last of them is already purged.
    const input = cleanupTime(lastEnd, lateness) <= wm ? undefined : this.agg.input(record.value);
    // `typeof`, not `instanceof Invalid`: see AggregateFunction.input.
    if (input === undefined || typeof input === "object") {
      divertFromWindow(record.value, ctx, this.nodeId, input);
      return;
    }

    const W = this.stride;
    const table = this.table;
    let slot = knownSlot;
    let found: SliceState | undefined;
    if (table === undefined) found = this.state.value();
    else {
      if (slot < 0) slot = table.find(ctx.key as Key);
      found = slot < 0 ? undefined : table.rows[slot];
    }
    let st = found;
    let newSlice = false;
    if (st === undefined) {
      // A literal of the exact size (for width 1) keeps the key's array compact: no growth slack.
      st = this.stride === 2 ? [NO_TIME, NO_TIME, s, 0] : [NO_TIME, NO_TIME, s];
      this.initAt(st, HEADER + 1, input);
      newSlice = true;
    } else {
      let j = HEADER;
      while (j < st.length && at(st, j) > s) j += W; // in-order input hits the newest slice at once
      // Only a record for a slice the key's last firing sealed changes the running totals.
      const totals = s <= at(st, F) ? table?.totals : undefined;
      if (j < st.length && st[j] === s) {
        totals?.before(slot, st, j + 1, false);
        this.agg.add(st, j + 1, input);
        totals?.after(slot, st, j + 1);
      } else {
        // A new array of the exact size rather than splice, whose growth slack would triple the
        // bytes per key: with 100 k keys, compact state is what stays in cache. The copy is
        // O(slices), so keys with many slices grow in place (their slack is relatively small).
        if (st.length > COMPACT_UP_TO) st.splice(j, 0, s, ...this.padTail);
        else {
          // One allocation of the exact size (concat with a shared pad), then the older slices
          // shifted up in place: slicing the head and tail and concatenating them made four
          // arrays per key per slide, a third of the hopping row's garbage.
          st = st.concat(this.pad);
          for (let i = st.length - 1; i >= j + W; i--) st[i] = st[i - W] as Slot;
          st[j] = s;
        }
        this.agg.init(st, j + 1, input);
        totals?.before(slot, st, j + 1, true);
        totals?.after(slot, st, j + 1);
        newSlice = true;
      }
    }

    let lateFiring = false;
    if (firstEnd - 1 <= wm) {
      // Some windows of this slice have already fired: fire again those not yet purged.
      const firstUnpurged = wm + 2 - lateness; // cleanupTime(e) > wm  <=>  e >= wm + 2 - lateness
      let e = firstUnpurged + floorMod(this.size - firstUnpurged, this.slide);
      if (e < firstEnd) e = firstEnd;
      const sealed = this.seal(st, slot, wm);
      for (; e <= lastEnd && e - 1 <= wm; e += this.slide) this.emit(st, e, ctx, slot, sealed);
      st[F] = sealed;
      lateFiring = true;
    }
    if (newSlice || lateFiring) {
      let need = cleanupTime(lastEnd, lateness);
      const next = a.endAfter(s, at(st, F) + 1);
      if (next !== undefined && next - 1 < need) need = next - 1;
      const t = at(st, T);
      if (t === NO_TIME || need < t) {
        if (t !== NO_TIME) ctx.timerService.deleteEventTimeTimer(t, WINDOW_TIMER);
        ctx.timerService.registerEventTimeTimer(need, WINDOW_TIMER);
        st[T] = need;
      }
    }
    if (table === undefined) this.state.update(st);
    // In the table, the array read is the stored one: only a new array is written (find() just
    // missed when slot < 0: emitting and timers do not change the slots).
    else if (slot < 0) table.add(ctx.key as Key, st);
    else if (st !== found) table.replace(ctx.key as Key, slot, st);
    else table.changed(ctx.key as Key);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    const table = this.table;
    if (table === undefined) {
      const st = this.state.value();
      if (st !== undefined) this.fire(st, timer.time, ctx, -1);
      return;
    }
    const slot = table.find(ctx.key as Key);
    if (slot >= 0) this.fire(table.rows[slot] as SliceState, timer.time, ctx, slot);
  }

  /**
   * onTimer for each key due at one time (a slide fires every key at once). On the heap, chunk by
   * chunk as processBatch: the keys' slots looked up first, then their arrays read (loadFound),
   * each stage a loop of independent loads whose cache misses overlap; then the keys fire in order.
   * A slot looked up here is still the key's when it fires: firing a key changes only that key's
   * state and timers, and the keys of a batch are distinct.
   */
  onEventTimers(timers: TimerBatch, ctx: BatchContext & WatermarkContext): void {
    const keys = timers.keys;
    const n = keys.length;
    const now = timers.time;
    const table = this.table;
    if (table === undefined) {
      for (let i = 0; i < n; i++) {
        if (!timers.enter(i)) continue;
        const st = this.state.value();
        if (st !== undefined) this.fire(st, now, ctx, -1);
      }
      return;
    }
    const chunk = this.chunkKeys;
    const slotOf = this.slotOf;
    for (let from = 0; from < n; from += LOOKUP_CHUNK) {
      const m = Math.min(n, from + LOOKUP_CHUNK) - from;
      for (let i = 0; i < m; i++) chunk[i] = keys[from + i] as Key;
      table.lookUp(chunk, m, slotOf);
      this.loadFound(table, m, true);
      for (let i = 0; i < m; i++) {
        const slot = slotOf[i] as number;
        if (timers.enter(from + i) && slot >= 0) this.fire(table.rows[slot] as SliceState, now, ctx, slot);
      }
    }
  }

  /** Fires the key's windows due at `now` and purges its expired slices; st is its state, at `slot` in the table (-1 off the heap). */
  private fire(st: SliceState, now: number, ctx: ProcessContext, slot: number): void {
    const W = this.stride;
    // FIRE every window of the key whose max timestamp is in (f, now], in end order.
    const fired = at(st, F);
    const sealed = this.seal(st, slot, now);
    // e is always nextEnd(st, after), so once the window due at now has fired (a timer's usual
    // case, after = now + 1) it is already the key's next firing, computed below otherwise.
    let after = fired + 1;
    let e = this.nextEnd(st, after);
    for (; e !== undefined && e - 1 <= now; e = this.nextEnd(st, after)) {
      this.emit(st, e, ctx, slot, sealed);
      after = e;
    }
    st[F] = sealed;
    // PURGE the slices whose last window is past its allowed lateness: the oldest, at the end
    // (lastEnd grows with s), so a truncation, which V8 does in place.
    let end = st.length;
    while (end > HEADER && cleanupTime(this.assigner.lastEnd(at(st, end - W)), this.allowedLatenessMs) <= now) end -= W;
    if (end < st.length) {
      if (slot >= 0) this.table?.totals?.remove(slot, st, end, st.length);
      st.length = end;
    }
    const t = at(st, T);
    const stale = t !== NO_TIME && t > now ? t : NO_TIME;
    if (st.length === HEADER) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      if (this.table === undefined) this.state.clear();
      else this.table.delete(slot);
      return;
    }
    let need = cleanupTime(this.assigner.lastEnd(at(st, st.length - W)), this.allowedLatenessMs);
    // The purge dropped only slices whose windows all end by now + 1: it changed no later end.
    const next = after === now + 1 ? e : this.nextEnd(st, now + 1);
    if (next !== undefined && next - 1 < need) need = next - 1;
    if (need !== stale) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      ctx.timerService.registerEventTimeTimer(need, WINDOW_TIMER);
    }
    st[T] = need;
    // In the table, the array read is the stored one, changed in place.
    if (this.table === undefined) this.state.update(st);
    else this.table.changed(ctx.key as Key);
  }

  /**
   * The key's last firing once it fires at `now` (F never goes back), with the slices this seals
   * folded into its running totals (slot -1: a key not yet in the table, which has none).
   */
  private seal(st: SliceState, slot: number, now: number): number {
    const fired = at(st, F);
    if (now <= fired) return fired;
    if (slot >= 0) this.table?.totals?.seal(slot, st, fired, now);
    return now;
  }

  /** Writes a fresh accumulator at st[off, off + width), growing st when off is its end. */
  private initAt(st: SliceState, off: number, input: number | string): void {
    for (let w = st.length; w < off + this.agg.width; w++) st.push(0);
    this.agg.init(st, off, input);
  }

  /** The smallest end > x of a window holding data of this key, or undefined. */
  private nextEnd(st: SliceState, x: number): number | undefined {
    return this.assigner.nextEnd(st, HEADER, this.stride, x);
  }

  /**
   * Emits window [end − size, end) merged from its slices, if it holds any; st is the key's state,
   * at `slot` in the table (-1: off the heap, or a key not yet added), whose exact running totals
   * of the slices up to `sealed` spare the merge.
   */
  private emit(st: SliceState, end: number, ctx: ProcessContext, slot: number, sealed: number): void {
    const start = end - this.size;
    const agg = this.agg;
    const scratch = this.scratch;
    const totals = this.table?.totals;
    let found = false;
    if (totals !== undefined && slot >= 0 && totals.ready(slot, st, sealed)) found = totals.windowInto(scratch, slot, st, start, end, sealed);
    else {
      // Oldest first, so that merges run in time order (a float sum's rounding is then fixed).
      for (let j = st.length - this.stride; j >= HEADER; j -= this.stride) {
        const s = at(st, j);
        if (s < start) continue;
        if (s >= end) break;
        if (found) agg.mergeInto(scratch, st, j + 1);
        else agg.copyTo(scratch, st, j + 1);
        found = true;
      }
    }
    if (!found) return;
    if (this.partial) {
      ctx.output(partialRecord(ctx.key as string, start, end, agg, scratch), end - 1);
      return;
    }
    ctx.output({ key: ctx.key as string, windowStart: start, windowEnd: end, value: agg.result(scratch) }, end - 1);
  }
}
