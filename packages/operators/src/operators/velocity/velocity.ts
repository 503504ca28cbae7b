// velocity: "more than N transactions per card within a rolling window" — the seeds' SAMA velocity
// check as a KeyedProcessFunction. Per key it keeps the timestamps (and ids, for evidence) of the
// records still inside the window and a cleanup timer for keys that fall silent. `ordered` decides
// in event-time order; `eager` on arrival.
import { z } from "zod";
import {
  valueState,
  type JsonObject,
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
import { EVIDENCE_CAP, ID_FIELD_DESCRIPTION, type Evidence, type EvidenceRef } from "../shared/evidence";
import { fieldParamIssues, readField } from "../shared/fields";
import { latePort, sortPending, type PendingRecord } from "../shared/ordered-input";

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

**State.** Per key, one entry: the timestamps and ids of the records inside the window (plus, in \`ordered\` mode,
those waiting for the watermark). A cleanup timer at *last record + windowMs* frees a silent key: once the watermark
is there, no on-time record can reach those timestamps. That is exact and earlier than the state TTL of 2 × windowMs
(event time) the entry also carries, as the seeds prescribe, so silent cards hold nothing.

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
  stateRetention: (params) => ({ ttlMs: 2 * params.windowMs, windowMs: params.windowMs, freedByTimers: true }),
  check(params, ctx): ParamIssue[] {
    const issues = fieldParamIssues(ctx, [{ param: "idField", field: params.idField, severity: "warning", consequence: "evidence will cite records by timestamp only" }]);
    if (params.threshold === 1) issues.push({ severity: "warning", param: "threshold", message: "a threshold of 1 alerts on every record" });
    return issues;
  },
  outputFields: () => ["key", "ts", "count", "event", "evidence"],
  create(params): Operator {
    return params.mode === "eager" ? new EagerVelocity(params) : new OrderedVelocity(params);
  },
});

/**
 * Everything velocity keeps for one key, in one value state: one state read and one write per
 * record and per timer, which matters at a million keys (each access is a hash lookup that
 * misses the CPU cache). The window is two parallel arrays rather than an object per record.
 */
interface KeyWindow extends JsonObject {
  /** Timestamps of the records inside the window, ascending (arrival order among equals). */
  ts: number[];
  /** Their ids for the evidence (null when a record has none), parallel to `ts`. */
  ids: Array<string | number | null>;
  /**
   * `ordered` mode: timestamps of the records waiting for the watermark, unsorted (arrival order);
   * null when none waits. Two parallel arrays rather than an object per record: one allocation
   * less per record, and none at all for a key's first waiting record after the arrays exist.
   */
  pendingTs: number[] | null;
  /** Their values, parallel to `pendingTs`. */
  pendingValues: JsonObject[] | null;
  /** When the registered cleanup timer fires; null when none is registered. */
  cleanupAt: number | null;
}

const emptyWindow = (): KeyWindow => ({ ts: [], ids: [], pendingTs: null, pendingValues: null, cleanupAt: null });

/** Drops the first `n` elements in place (splice would allocate an array of the removed ones). */
function dropFirst<T>(a: T[], n: number): void {
  const len = a.length;
  for (let i = n; i < len; i++) a[i - n] = a[i] as T;
  a.length = len - n;
}

/** Namespace of the timers that release `ordered` records once the watermark passes them. */
const RELEASE_TIMER = "release";

/** The window and the cleanup timer, shared by both modes. */
abstract class VelocityBase implements Operator {
  protected state!: ValueState<KeyWindow>;

  constructor(protected readonly params: VelocityParams) {}

  open(ctx: RuntimeContext): void {
    // State TTL 2 × windowMs, as the seeds prescribe, beside the cleanup timer (which frees a silent
    // key exactly and earlier). Timers judge TTL at their own time, so end of input (+∞) loses nothing.
    this.state = ctx.getValueState(valueState<KeyWindow>("velocity", { ttlMs: 2 * this.params.windowMs }));
  }

  abstract processElement(record: StreamRecord, ctx: ProcessContext): void;

  protected idOf(value: JsonObject): string | number | null {
    const id = readField(value, this.params.idField);
    return typeof id === "string" || typeof id === "number" ? id : null;
  }

  /** Keeps exactly one cleanup timer per non-empty window (re-armed lazily, not on every record). */
  protected ensureCleanup(w: KeyWindow, ctx: ProcessContext): void {
    const last = w.ts[w.ts.length - 1];
    if (w.cleanupAt === null && last !== undefined) {
      w.cleanupAt = last + this.params.windowMs;
      ctx.timerService.registerEventTimeTimer(w.cleanupAt, CLEANUP_TIMER);
    }
  }

  /**
   * The watermark has passed `time`: entries at or before `time − windowMs` can no longer fall in the
   * window of an on-time record. Empties the window when nothing newer is left, otherwise re-arms.
   */
  protected cleanup(w: KeyWindow, time: number, ctx: ProcessContext): void {
    w.cleanupAt = null;
    const last = w.ts[w.ts.length - 1];
    if (last === undefined || last + this.params.windowMs <= time) {
      w.ts = [];
      w.ids = [];
      return;
    }
    this.ensureCleanup(w, ctx);
  }

  /** Writes the key's state back, or frees the key when nothing is left. */
  protected store(w: KeyWindow): void {
    if (w.ts.length === 0 && w.pendingTs === null && w.cleanupAt === null) this.state.clear();
    else this.state.update(w);
  }

  /** The alert for a record at `ts` counting the window entries [from, to). */
  protected alert(value: JsonObject, ts: number, w: KeyWindow, from: number, to: number, ctx: ProcessContext): void {
    const refs: EvidenceRef[] = [];
    for (let i = Math.max(from, to - EVIDENCE_CAP); i < to; i++) {
      const id = w.ids[i];
      const t = w.ts[i] as number;
      refs.push(id === null || id === undefined ? { ts: t } : { id, ts: t });
    }
    // refs is fresh and already capped: it becomes the evidence as is (evidenceOf would copy it).
    const evidence: Evidence = { records: refs, total: to - from };
    ctx.output({ key: ctx.key ?? null, ts, count: to - from, event: value, evidence }, ts);
  }
}

/** `ordered`: buffer until the watermark, then count in timestamp order; equal timestamps count each other. */
class OrderedVelocity extends VelocityBase {
  processElement(record: StreamRecord, ctx: ProcessContext): void {
    if (record.timestamp <= ctx.timerService.currentWatermark()) {
      ctx.sideOutput("late", record.value, record.timestamp);
      return;
    }
    const w = this.state.value() ?? emptyWindow();
    if (w.pendingTs === null || w.pendingValues === null) {
      w.pendingTs = [record.timestamp];
      w.pendingValues = [record.value];
    } else {
      w.pendingTs.push(record.timestamp);
      w.pendingValues.push(record.value);
    }
    this.state.update(w);
    ctx.timerService.registerEventTimeTimer(record.timestamp, RELEASE_TIMER);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    if (timer.domain !== "event") return;
    const w = this.state.value();
    if (w === undefined) return;
    // Release first: a record at exactly the cleanup time is on time and must see the window.
    const pts = w.pendingTs;
    const pvs = w.pendingValues;
    if (pts !== null && pvs !== null) {
      if (pts.length === 1) {
        const ts = pts[0] as number;
        if (ts <= timer.time) {
          // The common case (one record per key and timestamp): no partitioning, no sorting, no allocation.
          w.pendingTs = null;
          w.pendingValues = null;
          this.countGroup(w, ts, pvs, 0, 1, ctx);
          this.ensureCleanup(w, ctx);
        }
      } else {
        const due: PendingRecord[] = [];
        const restTs: number[] = [];
        const restValues: JsonObject[] = [];
        for (let i = 0; i < pts.length; i++) {
          const ts = pts[i] as number;
          if (ts <= timer.time) due.push({ ts, value: pvs[i] as JsonObject });
          else {
            restTs.push(ts);
            restValues.push(pvs[i] as JsonObject);
          }
        }
        if (due.length > 0) {
          w.pendingTs = restTs.length > 0 ? restTs : null;
          w.pendingValues = restTs.length > 0 ? restValues : null;
          this.count(w, sortPending(due), ctx);
        }
      }
    }
    if (timer.namespace === CLEANUP_TIMER && w.cleanupAt === timer.time) this.cleanup(w, timer.time, ctx);
    this.store(w);
  }

  /** Counts released records (sorted), one group of equal timestamps at a time. */
  private count(w: KeyWindow, due: readonly PendingRecord[], ctx: ProcessContext): void {
    const values = due.map((r) => r.value);
    for (let i = 0; i < due.length; ) {
      const ts = (due[i] as PendingRecord).ts;
      let j = i;
      while (j < due.length && (due[j] as PendingRecord).ts === ts) j++;
      this.countGroup(w, ts, values, i, j, ctx);
      i = j;
    }
    this.ensureCleanup(w, ctx);
  }

  /** Counts the records values[from..to), all at `ts` (later than every entry of the window's), together. */
  private countGroup(w: KeyWindow, ts: number, values: readonly JsonObject[], from: number, to: number, ctx: ProcessContext): void {
    // Records come here in timestamp order, so the window is sorted and eviction is a prefix.
    const horizon = ts - this.params.windowMs;
    let first = 0;
    while (first < w.ts.length && (w.ts[first] as number) <= horizon) first++;
    if (first > 0) {
      dropFirst(w.ts, first);
      dropFirst(w.ids, first);
    }
    for (let k = from; k < to; k++) {
      w.ts.push(ts);
      w.ids.push(this.idOf(values[k] as JsonObject));
    }
    if (w.ts.length >= this.params.threshold) {
      for (let k = from; k < to; k++) this.alert(values[k] as JsonObject, ts, w, 0, w.ts.length, ctx);
    }
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
    const w = this.state.value() ?? emptyWindow();
    // Entries at or before watermark − windowMs are outside every future on-time record's window.
    const horizon = watermark - this.params.windowMs;
    let first = 0;
    while (first < w.ts.length && (w.ts[first] as number) <= horizon) first++;
    if (first > 0) {
      dropFirst(w.ts, first);
      dropFirst(w.ids, first);
    }
    // Insert after every entry at or before ts: sorted by timestamp, arrival order among equals.
    let at = w.ts.length;
    while (at > 0 && (w.ts[at - 1] as number) > ts) at--;
    w.ts.splice(at, 0, ts);
    w.ids.splice(at, 0, this.idOf(record.value));
    let from = at;
    while (from > 0 && (w.ts[from - 1] as number) > ts - this.params.windowMs) from--;
    if (at + 1 - from >= this.params.threshold) this.alert(record.value, ts, w, from, at + 1, ctx);
    this.ensureCleanup(w, ctx);
    this.store(w);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    if (timer.domain !== "event" || timer.namespace !== CLEANUP_TIMER) return;
    const w = this.state.value();
    if (w === undefined || w.cleanupAt !== timer.time) return;
    this.cleanup(w, timer.time, ctx);
    this.store(w);
  }
}
