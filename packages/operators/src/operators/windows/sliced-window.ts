// The window operator for tumbling and hopping windows (Flink SQL's SlicingWindowOperator): per
// key, one accumulator per non-empty slice, one event-time timer at the key's next firing or
// purge, and window results merged from slices when they fire.
//
// Vocabulary: a *slice* is a gcd(size, slide)-long bucket of one key's records, the unit of state;
// a *window* [end − size, end) covers size ÷ step consecutive slices; it *fires* when the watermark
// reaches end − 1 and is *purged* at end − 1 + allowedLateness (trigger.ts).
import { valueState, type Operator, type ProcessContext, type RuntimeContext, type StreamRecord, type TimerFiring, type ValueState } from "../../core/api";
import { errorRecord } from "../side-outputs";
import { aggregateFunction, Invalid, type AggregateFunction, type AggregateParams, type Slot } from "./aggregate";
import { floorMod, SliceAssigner } from "./assigners";
import { cleanupTime, NO_TIME, WINDOW_TIMER } from "./trigger";

/**
 * One key's window state, flat: [t, f, s0, acc0…, s1, acc1…, …] with slices ascending by start s.
 *   t: the key's registered timer (NO_TIME: none); f: windows whose max timestamp is <= f have fired.
 * One array of doubles per key (for numeric aggregates): the per-key cost of the operator.
 */
export type SliceState = Slot[];
const T = 0;
const F = 1;
const HEADER = 2;

export const SLICES_STATE = valueState<SliceState>("slices");

const at = (st: SliceState, i: number): number => st[i] as number;

export class SlicedWindowOperator implements Operator {
  // ---- configuration
  private readonly assigner: SliceAssigner;
  private readonly agg: AggregateFunction;
  private readonly size: number;
  private readonly slide: number;
  /** Slots per slice: its start plus the accumulator. */
  private readonly stride: number;
  // ---- scratch, not checkpointed
  private readonly scratch: Slot[];
  // ---- keyed state (checkpointed by the engine)
  private state!: ValueState<SliceState>;

  constructor(
    private readonly nodeId: string,
    sizeMs: number,
    slideMs: number,
    aggregate: AggregateParams,
    private readonly allowedLatenessMs: number,
  ) {
    this.assigner = new SliceAssigner(sizeMs, slideMs);
    this.agg = aggregateFunction(aggregate);
    this.size = sizeMs;
    this.slide = slideMs;
    this.stride = 1 + this.agg.width;
    this.scratch = new Array<Slot>(this.agg.width).fill(0);
  }

  open(ctx: RuntimeContext): void {
    this.state = ctx.getValueState(SLICES_STATE);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const a = this.assigner;
    const lateness = this.allowedLatenessMs;
    const s = a.sliceStart(record.timestamp);
    const lastEnd = a.lastEnd(s);
    const firstEnd = a.firstEnd(s);
    if (firstEnd > lastEnd) return; // slide > size: the record falls between windows, in none
    const wm = ctx.timerService.currentWatermark();
    // Late for every window it belongs to: the last of them is already purged.
    if (cleanupTime(lastEnd, lateness) <= wm) {
      ctx.sideOutput("late", record.value);
      return;
    }
    const input = this.agg.input(record.value);
    if (input instanceof Invalid) {
      ctx.sideOutput("errors", errorRecord(this.nodeId, input.message, record.value));
      return;
    }

    const W = this.stride;
    let st = this.state.value();
    let newSlice = false;
    if (st === undefined) {
      // A literal of the exact size (for width 1) keeps the key's array compact: no growth slack.
      st = this.stride === 2 ? [NO_TIME, NO_TIME, s, 0] : [NO_TIME, NO_TIME, s];
      this.initAt(st, HEADER + 1, input);
      newSlice = true;
    } else {
      let j = st.length - W;
      while (j >= HEADER && at(st, j) > s) j -= W; // in-order input hits the last slice at once
      if (j >= HEADER && st[j] === s) this.agg.add(st, j + 1, input);
      else {
        const pos = j + W;
        if (pos === st.length) st.push(s);
        else st.splice(pos, 0, s, ...this.scratch.map(() => 0));
        this.initAt(st, pos + 1, input);
        newSlice = true;
      }
    }

    let lateFiring = false;
    if (firstEnd - 1 <= wm) {
      // Some windows of this slice have already fired: fire again those not yet purged.
      const firstUnpurged = wm + 2 - lateness; // cleanupTime(e) > wm  <=>  e >= wm + 2 - lateness
      let e = firstUnpurged + floorMod(this.size - firstUnpurged, this.slide);
      if (e < firstEnd) e = firstEnd;
      for (; e <= lastEnd && e - 1 <= wm; e += this.slide) this.emit(st, e, ctx);
      if (wm > at(st, F)) st[F] = wm;
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
    this.state.update(st);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    const st = this.state.value();
    if (st === undefined) return;
    const now = timer.time;
    const W = this.stride;
    // FIRE every window of the key whose max timestamp is in (f, now], in end order.
    for (let e = this.nextEnd(st, at(st, F) + 1); e !== undefined && e - 1 <= now; e = this.nextEnd(st, e)) this.emit(st, e, ctx);
    if (now > at(st, F)) st[F] = now;
    // PURGE the slices whose last window is past its allowed lateness (a prefix: lastEnd grows with s).
    let j = HEADER;
    while (j < st.length && cleanupTime(this.assigner.lastEnd(at(st, j)), this.allowedLatenessMs) <= now) j += W;
    if (j > HEADER) st.splice(HEADER, j - HEADER);
    const t = at(st, T);
    const stale = t !== NO_TIME && t > now ? t : NO_TIME;
    if (st.length === HEADER) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      this.state.clear();
      return;
    }
    let need = cleanupTime(this.assigner.lastEnd(at(st, HEADER)), this.allowedLatenessMs);
    const next = this.nextEnd(st, now + 1);
    if (next !== undefined && next - 1 < need) need = next - 1;
    if (need !== stale) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      ctx.timerService.registerEventTimeTimer(need, WINDOW_TIMER);
    }
    st[T] = need;
    this.state.update(st);
  }

  /** Writes a fresh accumulator at st[off, off + width), growing st when off is its end. */
  private initAt(st: SliceState, off: number, input: number | string): void {
    for (let w = st.length; w < off + this.agg.width; w++) st.push(0);
    this.agg.init(st, off, input);
  }

  /** The smallest end > x of a window holding data of this key, or undefined. */
  private nextEnd(st: SliceState, x: number): number | undefined {
    const a = this.assigner;
    let best: number | undefined;
    for (let j = HEADER; j < st.length; j += this.stride) {
      const s = at(st, j);
      if (best !== undefined && a.firstEnd(s) >= best) break; // later slices only have later windows
      const e = a.endAfter(s, x);
      if (e !== undefined && (best === undefined || e < best)) best = e;
    }
    return best;
  }

  /** Emits window [end − size, end) merged from its slices, if it holds any. */
  private emit(st: SliceState, end: number, ctx: ProcessContext): void {
    const start = end - this.size;
    const agg = this.agg;
    const scratch = this.scratch;
    let found = false;
    for (let j = HEADER; j < st.length; j += this.stride) {
      const s = at(st, j);
      if (s < start) continue;
      if (s >= end) break;
      if (found) agg.mergeInto(scratch, st, j + 1);
      else agg.copyTo(scratch, st, j + 1);
      found = true;
    }
    if (!found) return;
    ctx.output({ key: ctx.key as string, windowStart: start, windowEnd: end, value: agg.result(scratch) }, end - 1);
  }
}
