// velocity: "more than N transactions per card within a rolling window" — the seeds' SAMA velocity
// check as a KeyedProcessFunction. Per key it keeps the timestamps (and ids, for evidence) of the
// records still inside the window, a cleanup timer for keys that fall silent, and state TTL as the
// belt to the timer's braces. `ordered` decides in event-time order; `eager` on arrival.
import { z } from "zod";
import {
  listState,
  valueState,
  type JsonObject,
  type ListState,
  type Operator,
  type ProcessContext,
  type RuntimeContext,
  type StreamRecord,
  type TimerFiring,
  type ValueState,
} from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { evidenceOf, evidenceRef, ID_FIELD_DESCRIPTION, type EvidenceRef } from "../shared/evidence";
import { EventTimeBuffer, latePort, type PendingRecord } from "../shared/ordered-input";

export const velocityParams = z.strictObject({
  threshold: z
    .number()
    .int()
    .min(1)
    .describe("Alert when a key has at least this many records in the window, the current one included (e.g. 5)"),
  windowMs: durationMs().describe(
    "Length of the rolling window (ms, or e.g. \"10m\"): a record at t counts the key's records with timestamps in (t − windowMs, t]",
  ),
  mode: z
    .enum(["ordered", "eager"])
    .default("ordered")
    .describe(
      "`ordered` (default): decide when the watermark passes the record, in timestamp order, so the output does not depend on arrival order. `eager`: decide on arrival, counting only the records that arrived before",
    ),
  idField: fieldName().default("id").describe(ID_FIELD_DESCRIPTION),
});
export type VelocityParams = z.infer<typeof velocityParams>;

/** Namespace of the timer that frees a silent key's window. */
const CLEANUP_TIMER = "cleanup";

/** One record inside a key's window: its timestamp and, when it has one, its id. */
type WindowEntry = EvidenceRef;

export const velocitySpec = defineOperator({
  type: "velocity",
  version: 1,
  category: "pattern",
  title: "Velocity",
  summary: "Alert when a key has at least N records within a rolling event-time window",
  docs: `For each record at event time *t*, counts the key's records with timestamps in **(t − windowMs, t]**,
itself included (a record exactly \`windowMs\` earlier is outside). When the count is at least \`threshold\` it
emits \`{ key, ts, count, event, evidence }\`: \`event\` is the record, \`evidence.records\` the \`{ id, ts }\` of the
records counted (the latest 50) and \`evidence.total\` their number. Every record of a burst at or above the
threshold emits, so downstream can act on each transaction.

**Modes.**
- \`ordered\` (default): records wait in state until the watermark passes them, then are counted in timestamp
  order (records with equal timestamps count each other, and are emitted in canonical-JSON order). The output
  is the same whatever the arrival order within the source's out-of-orderness bound; the cost is a delay of about
  \`maxOutOfOrdernessMs\`. Late records (at or below the watermark on arrival) go to \`late\`.
- \`eager\`: decides on arrival, for the lowest latency. It gives up order-independence: a record counts only the
  records that **arrived** before it, so a burst delivered out of order may alert on a different record, or not at
  all, and an earlier-stamped record arriving later never raises the count of one already decided. Late records
  still go to \`late\`, so both modes count the same records.

**State.** Per key, the \`{ id, ts }\` of the records inside the window (plus, in \`ordered\` mode, those
waiting for the watermark). A cleanup timer at *last record + windowMs* frees a silent key: after it, no new
on-time record can reach those timestamps. State TTL is 2 × windowMs, as the seeds prescribe.

**Pitfalls.** State grows with the records per key per window: a 24 h window over a card doing thousands of
transactions a day keeps thousands of entries for it. A threshold of 1 alerts on every record.`,
  params: velocityParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "alerts", kind: "keyed", description: "{ key, ts, count, event, evidence } for each record whose count reaches the threshold" },
    latePort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  check(params): ParamIssue[] {
    return params.threshold === 1
      ? [{ severity: "warning", param: "threshold", message: "a threshold of 1 alerts on every record" }]
      : [];
  },
  outputFields: () => ["key", "ts", "count", "event", "evidence"],
  create(params): Operator {
    return params.mode === "eager" ? new EagerVelocity(params) : new OrderedVelocity(params);
  },
});

/** The window and the cleanup timer, shared by both modes. */
abstract class VelocityBase implements Operator {
  protected window!: ListState<WindowEntry>;
  /** When the pending cleanup timer fires; absent when none is registered. */
  protected cleanupAt!: ValueState<number>;

  constructor(protected readonly params: VelocityParams) {}

  open(ctx: RuntimeContext): void {
    // TODO(core): declare TTL 2 × windowMs here once TTL'd state stays readable in the timers that
    // end of input fires (today every TTL'd entry is expired at watermark +∞, which would lose the
    // window of the records released last). The cleanup timer alone already frees every key.
    this.window = ctx.getListState(listState<WindowEntry>("window"));
    this.cleanupAt = ctx.getValueState(valueState<number>("cleanupAt"));
  }

  abstract processElement(record: StreamRecord, ctx: ProcessContext): void;

  /** Keeps exactly one cleanup timer per non-empty window (re-armed lazily, not on every record). */
  protected ensureCleanup(lastTs: number, ctx: ProcessContext): void {
    if (this.cleanupAt.value() === undefined) {
      const at = lastTs + this.params.windowMs;
      ctx.timerService.registerEventTimeTimer(at, CLEANUP_TIMER);
      this.cleanupAt.update(at);
    }
  }

  /**
   * The watermark has passed `time`: entries at or before `time − windowMs` can no longer fall in the
   * window of an on-time record. Frees the key when nothing newer is left, otherwise re-arms.
   */
  protected cleanup(time: number, ctx: ProcessContext): void {
    const entries = this.window.get();
    const last = entries[entries.length - 1];
    if (last === undefined || last.ts + this.params.windowMs <= time) {
      this.window.clear();
      this.cleanupAt.clear();
      return;
    }
    const at = last.ts + this.params.windowMs;
    ctx.timerService.registerEventTimeTimer(at, CLEANUP_TIMER);
    this.cleanupAt.update(at);
  }

  protected alert(value: JsonObject, ts: number, counted: readonly WindowEntry[], ctx: ProcessContext): void {
    ctx.output({ key: ctx.key ?? null, ts, count: counted.length, event: value, evidence: evidenceOf(counted) }, ts);
  }
}

/** `ordered`: buffer until the watermark, then count in timestamp order; equal timestamps count each other. */
class OrderedVelocity extends VelocityBase {
  private readonly buffer = new EventTimeBuffer();

  override open(ctx: RuntimeContext): void {
    super.open(ctx);
    this.buffer.open(ctx);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    if (!this.buffer.add(record.value, record.timestamp, ctx)) ctx.sideOutput("late", record.value, record.timestamp);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    if (timer.domain !== "event") return;
    // Release first: a record at exactly the cleanup time is on time and must see the window.
    const due = this.buffer.release(timer.time);
    if (due.length > 0) this.count(due, ctx);
    if (timer.namespace === CLEANUP_TIMER) this.cleanup(timer.time, ctx);
  }

  /** Counts released records (sorted by timestamp), one group of equal timestamps at a time. */
  private count(due: readonly PendingRecord[], ctx: ProcessContext): void {
    let entries = this.window.get().slice();
    for (let i = 0; i < due.length; ) {
      const ts = (due[i] as PendingRecord).ts;
      let j = i;
      while (j < due.length && (due[j] as PendingRecord).ts === ts) j++;
      // Records arrive here in timestamp order, so the window is sorted and eviction is a prefix.
      let first = 0;
      while (first < entries.length && (entries[first] as WindowEntry).ts <= ts - this.params.windowMs) first++;
      if (first > 0) entries = entries.slice(first);
      for (let k = i; k < j; k++) entries.push(evidenceRef((due[k] as PendingRecord).value, ts, this.params.idField));
      if (entries.length >= this.params.threshold) {
        for (let k = i; k < j; k++) this.alert((due[k] as PendingRecord).value, ts, entries, ctx);
      }
      i = j;
    }
    this.window.update(entries);
    const last = entries[entries.length - 1];
    if (last !== undefined) this.ensureCleanup(last.ts, ctx);
  }
}

/** `eager`: count on arrival among the records that arrived before (see the docs for what it gives up). */
class EagerVelocity extends VelocityBase {
  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const ts = record.timestamp;
    const watermark = ctx.timerService.currentWatermark();
    if (ts <= watermark) {
      ctx.sideOutput("late", record.value, ts);
      return;
    }
    // Entries at or before watermark − windowMs are outside every future on-time record's window.
    const horizon = watermark - this.params.windowMs;
    const kept: WindowEntry[] = [];
    let inserted = false;
    const entry = evidenceRef(record.value, ts, this.params.idField);
    for (const e of this.window.get()) {
      if (e.ts <= horizon) continue;
      // Keep the window sorted by timestamp, arrival order among equal timestamps.
      if (!inserted && e.ts > ts) {
        kept.push(entry);
        inserted = true;
      }
      kept.push(e);
    }
    if (!inserted) kept.push(entry);
    this.window.update(kept);
    const counted = kept.filter((e) => e.ts > ts - this.params.windowMs && e.ts <= ts);
    if (counted.length >= this.params.threshold) this.alert(record.value, ts, counted, ctx);
    this.ensureCleanup((kept[kept.length - 1] as WindowEntry).ts, ctx);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    if (timer.domain === "event" && timer.namespace === CLEANUP_TIMER) this.cleanup(timer.time, ctx);
  }
}
