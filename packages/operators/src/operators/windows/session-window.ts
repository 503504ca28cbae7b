// The window operator for session windows (Flink's WindowOperator with a merging assigner): a
// record at t opens the window [t, t + gap); windows of a key that overlap or touch merge, their
// accumulators merged too (no raw records kept). Each key keeps one timer, at its next firing
// (session end − 1) or purge (session end − 1 + allowedLateness).
import { valueState, type Operator, type ProcessContext, type RuntimeContext, type StreamRecord, type TimerFiring, type ValueState } from "../../core/api";
import { aggregateFunction, divertFromWindow, type AggregateFunction, type AggregateParams, type Slot } from "./aggregate";
import { cleanupTime, NO_TIME, WINDOW_TIMER } from "./trigger";

/**
 * One key's sessions, flat: [t, f, start0, end0, acc0…, start1, end1, acc1…, …], sorted by start,
 * disjoint and not touching (touching sessions merge). Ends are exclusive: last record + gap.
 *   t: the key's registered timer (NO_TIME: none); f: sessions whose max timestamp is <= f have fired.
 */
export type SessionState = Slot[];
const T = 0;
const F = 1;
const HEADER = 2;

export const SESSIONS_STATE = valueState<SessionState>("sessions");

const at = (st: SessionState, i: number): number => st[i] as number;

export class SessionWindowOperator implements Operator {
  private readonly agg: AggregateFunction;
  /** Slots per session: start, end, accumulator. */
  private readonly stride: number;
  private readonly scratch: Slot[];
  private state!: ValueState<SessionState>;

  constructor(
    private readonly nodeId: string,
    private readonly gapMs: number,
    aggregate: AggregateParams,
    private readonly allowedLatenessMs: number,
  ) {
    this.agg = aggregateFunction(aggregate);
    this.stride = 2 + this.agg.width;
    this.scratch = new Array<Slot>(this.agg.width).fill(0);
  }

  open(ctx: RuntimeContext): void {
    this.state = ctx.getValueState(SESSIONS_STATE);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const t = record.timestamp;
    const wm = ctx.timerService.currentWatermark();
    const lateness = this.allowedLatenessMs;
    const W = this.stride;
    let st = this.state.value();
    let start = t;
    let end = t + this.gapMs;
    // The sessions [from, to) that the new window merges with: those intersecting it, touching
    // included (Flink's TimeWindow.intersects: a record at exactly a session's end joins it).
    let from = HEADER;
    let to = HEADER;
    if (st !== undefined) {
      from = st.length;
      for (let j = HEADER; j < st.length; j += W) {
        if (at(st, j + 1) >= start) {
          from = j;
          break;
        }
      }
      to = from;
      while (to < st.length && at(st, to) <= end) to += W;
      if (to > from) {
        if (at(st, from) < start) start = at(st, from);
        if (at(st, to - W + 1) > end) end = at(st, to - W + 1);
      }
    }
    // Late when even the merged session is past its allowed lateness (Flink: isWindowLate after merging).
    const input = cleanupTime(end, lateness) <= wm ? undefined : this.agg.input(record.value);
    // `typeof`, not `instanceof Invalid`: see AggregateFunction.input.
    if (input === undefined || typeof input === "object") {
      divertFromWindow(record.value, ctx, this.nodeId, input);
      return;
    }

    // The merged accumulator, built in scratch, then written over the merged sessions.
    const scratch = this.scratch;
    this.agg.init(scratch, 0, input);
    if (st === undefined) st = [NO_TIME, NO_TIME];
    else for (let j = from; j < to; j += W) this.agg.mergeInto(scratch, st, j + 2);
    const merged = W === 3 ? [start, end, scratch[0] as Slot] : [start, end, ...scratch];
    if (to - from === W) for (let w = 0; w < W; w++) st[from + w] = merged[w] as Slot;
    else if (from === st.length) st.push(...merged);
    else st.splice(from, to - from, ...merged);

    if (end - 1 <= wm) {
      // The merged session is past its firing time but within allowed lateness: fire it again now.
      this.emit(st, from, ctx);
      if (wm > at(st, F)) st[F] = wm;
    }
    const need = end - 1 > at(st, F) ? end - 1 : cleanupTime(end, lateness);
    const timer = at(st, T);
    if (timer === NO_TIME || need < timer) {
      if (timer !== NO_TIME) ctx.timerService.deleteEventTimeTimer(timer, WINDOW_TIMER);
      ctx.timerService.registerEventTimeTimer(need, WINDOW_TIMER);
      st[T] = need;
    }
    this.state.update(st);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    const st = this.state.value();
    if (st === undefined) return;
    const now = timer.time;
    const lateness = this.allowedLatenessMs;
    const W = this.stride;
    const f = at(st, F);
    // FIRE the sessions whose max timestamp is in (f, now], in start order.
    for (let j = HEADER; j < st.length; j += W) {
      const end = at(st, j + 1);
      if (end - 1 > f && end - 1 <= now) this.emit(st, j, ctx);
    }
    if (now > f) st[F] = now;
    // PURGE the sessions past their allowed lateness; find the next firing or purge among the rest.
    let w = HEADER;
    let need = Number.POSITIVE_INFINITY;
    for (let j = HEADER; j < st.length; j += W) {
      const end = at(st, j + 1);
      if (cleanupTime(end, lateness) <= now) continue;
      if (w !== j) for (let k = 0; k < W; k++) st[w + k] = st[j + k] as Slot;
      w += W;
      const next = end - 1 > now ? end - 1 : cleanupTime(end, lateness);
      if (next < need) need = next;
    }
    st.length = w;
    const t = at(st, T);
    const stale = t !== NO_TIME && t > now ? t : NO_TIME;
    if (w === HEADER) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      this.state.clear();
      return;
    }
    if (need !== stale) {
      if (stale !== NO_TIME) ctx.timerService.deleteEventTimeTimer(stale, WINDOW_TIMER);
      ctx.timerService.registerEventTimeTimer(need, WINDOW_TIMER);
    }
    st[T] = need;
    this.state.update(st);
  }

  /** Emits the session at st[j]: its copy in scratch feeds the result. */
  private emit(st: SessionState, j: number, ctx: ProcessContext): void {
    this.agg.copyTo(this.scratch, st, j + 2);
    const start = at(st, j);
    const end = at(st, j + 1);
    ctx.output({ key: ctx.key as string, windowStart: start, windowEnd: end, value: this.agg.result(this.scratch) }, end - 1);
  }
}
