// Event-time ordering for pattern operators: a record is buffered in keyed state until the
// watermark passes its timestamp, then handed to the operator in timestamp order (ties broken by
// the record's canonical JSON). Once the watermark has passed t, no record at or before t can still
// arrive (it would be late), so a pattern evaluated in this order gives the same output whatever
// the arrival order within the out-of-orderness bound: replays and re-partitioned inputs agree.
// The price is latency: a record is decided when the watermark reaches it, i.e. about
// maxOutOfOrdernessMs after it arrives. Late records (timestamp <= watermark on arrival) go to the
// `late` port unchanged.
import {
  listState,
  type JsonObject,
  type ListState,
  type Operator,
  type ProcessContext,
  type RuntimeContext,
  type TimerFiring,
} from "../../core/api";
import type { OutputPortSpec } from "../../core/spec";
import { canonicalJson } from "./fields";

/** Namespace of the timers that release buffered records. */
export const RELEASE_TIMER = "release";

/** A record waiting for the watermark. */
export interface PendingRecord extends JsonObject {
  ts: number;
  value: JsonObject;
}

/** The `late` port of an ordered operator. */
export function latePort(): OutputPortSpec {
  return {
    id: "late",
    label: "late",
    kind: "stream",
    side: true,
    description: "Records that arrived after the watermark had passed their timestamp, unchanged; unconnected, they become dead letters",
  };
}

/** Orders pending records by timestamp, then by canonical JSON (computed only for ties). */
export function sortPending(records: PendingRecord[]): PendingRecord[] {
  if (records.length < 2) return records;
  const canon = new Map<PendingRecord, string>();
  const key = (r: PendingRecord): string => {
    let c = canon.get(r);
    if (c === undefined) {
      c = canonicalJson(r.value);
      canon.set(r, c);
    }
    return c;
  };
  return records.sort((a, b) => a.ts - b.ts || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/** The keyed buffer of not-yet-released records (one list per key, one release timer per timestamp). */
export class EventTimeBuffer {
  private pending!: ListState<PendingRecord>;

  constructor(private readonly stateName = "ordered.buffer") {}

  open(ctx: RuntimeContext): void {
    this.pending = ctx.getListState(listState<PendingRecord>(this.stateName));
  }

  /** Buffers the record; false (nothing buffered) when it is late. */
  add(value: JsonObject, ts: number, ctx: ProcessContext): boolean {
    if (ts <= ctx.timerService.currentWatermark()) return false;
    this.pending.add({ ts, value });
    // One timer per distinct timestamp: the timer service merges equal registrations.
    ctx.timerService.registerEventTimeTimer(ts, RELEASE_TIMER);
    return true;
  }

  /** Removes and returns the records at or before `time`, in processing order. */
  release(time: number): PendingRecord[] {
    const all = this.pending.get();
    if (all.length === 0) return [];
    const due: PendingRecord[] = [];
    const rest: PendingRecord[] = [];
    for (const r of all) (r.ts <= time ? due : rest).push(r);
    if (due.length === 0) return [];
    if (rest.length === 0) this.pending.clear();
    else this.pending.update(rest);
    return sortPending(due);
  }
}

/** What an ordered operator implements: the same hooks as an Operator, but records arrive in event-time order. */
export interface OrderedProcessFunction {
  open(ctx: RuntimeContext): void;
  /** One record, in (timestamp, canonical JSON) order per key; `ts` is its event time. */
  processInOrder(value: JsonObject, ts: number, ctx: ProcessContext): void;
  /** A timer of the operator's own; every record at or before its time has been processed first. */
  onTimer?(timer: TimerFiring, ctx: ProcessContext): void;
}

/**
 * Wraps an OrderedProcessFunction into an Operator: buffer on arrival, release on the watermark.
 * Any timer firing releases the records due at its time first, so a record at exactly a timer's
 * time is seen before the timer's logic (a record at a session's gap end joins the session, an end
 * event at exactly the deadline resolves it).
 */
export function orderedOperator(fn: OrderedProcessFunction): Operator {
  const buffer = new EventTimeBuffer();
  const releaseDue = (time: number, ctx: ProcessContext): void => {
    for (const r of buffer.release(time)) fn.processInOrder(r.value, r.ts, ctx);
  };
  return {
    open(ctx) {
      buffer.open(ctx);
      fn.open(ctx);
    },
    processElement(record, ctx) {
      if (!buffer.add(record.value, record.timestamp, ctx)) ctx.sideOutput("late", record.value, record.timestamp);
    },
    onTimer(timer, ctx) {
      if (timer.domain === "event") releaseDue(timer.time, ctx);
      if (timer.namespace !== RELEASE_TIMER) fn.onTimer?.(timer, ctx);
    },
  };
}
