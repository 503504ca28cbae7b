// velocity: "more than N transactions per card within a rolling window" — the seeds' SAMA velocity
// check as a KeyedProcessFunction. Per key it keeps the timestamps (and ids, for evidence) of the
// records still inside the window and a cleanup timer for keys that fall silent. `ordered` decides
// in event-time order; `eager` on arrival.
import { z } from "zod";
import {
  valueState,
  type BatchContext,
  type Collector,
  type JsonObject,
  type Key,
  type Operator,
  type ProcessContext,
  type RuntimeContext,
  type StreamRecord,
  type TimerFiring,
  type ValueState,
  type WatermarkContext,
} from "../../core/api";
import { TimeBuckets } from "../../core/time-buckets";
import { MAX_NUMBER_BYTES, MAX_STR_BYTES, ValueWriter } from "../../core/snapshot-codec";
import { ChangeReportingSlotTableView, estimateBytes, KeptColumns, KeySlots, OperatorKeptTable, SlotSchedule, stateBuffer, stateFloat64Array, type MaterializeBudget, type PackedColumns, type SnapshotHold, type TableChanges, type TtlEntry } from "../../core/state";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { EVIDENCE_CAP, ID_FIELD_DESCRIPTION, type Evidence, type EvidenceRef } from "../shared/evidence";
import { fieldParamIssues, readField } from "../shared/fields";
import { latePort, sortPending, type PendingRecord } from "../shared/ordered-input";
import { ReleaseOrder, RepeatedSlots } from "./release-order";
import { dropIds, fillIds, FIRST_ID, ID_AREA_BYTES, idEntryBytes, idOffset, insertId, readId, readIds, resetIds, writeIds } from "./row-ids";

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
  // The handle storage's timers, which the heap storage keeps in its own schedule and buffer: a
  // cleanup per window, a release per (key, timestamp) waiting.
  impliedTimers: () => ({
    state: VELOCITY_STATE,
    namespaces: [CLEANUP_TIMER, RELEASE_TIMER],
    of(_key, stored) {
      const v = (stored as TtlEntry<KeyWindow>).v;
      const timers: Array<[number, string]> = v.cleanupAt !== null ? [[v.cleanupAt, CLEANUP_TIMER]] : [];
      for (const ts of new Set(v.pendingTs ?? [])) timers.push([ts, RELEASE_TIMER]);
      return timers;
    },
  }),
  create(params): Operator {
    return params.mode === "eager" ? byStorage(() => new SlotEagerVelocity(params), () => new EagerVelocity(params)) : byStorage(() => new SlotOrderedVelocity(params), () => new OrderedVelocity(params));
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

/**
 * What counting reads and writes of one key's window, whichever storage holds it: the handle
 * storage's KeyWindow and a spilled heap window (ArrayWindow), or a row of doubles (RowWindows).
 * Entries are ascending by timestamp; ids run parallel (null when a record has none).
 */
interface WindowView {
  readonly length: number;
  tsAt(i: number): number;
  idAt(i: number): string | number | null;
  /** Drops the entries at or before `horizon` (a prefix: entries are ascending). */
  evictUpTo(horizon: number): void;
  push(ts: number, id: string | number | null): void;
  /** Inserts after every entry at or before `ts` (arrival order among equals); returns its index. */
  insert(ts: number, id: string | number | null): number;
}

/** A window as two arrays; `ids` may stay null while no record of the window has an id (heap storage). */
interface CountWindow {
  ts: number[];
  ids: Array<string | number | null> | null;
}

/** Drops the first `n` elements in place (splice would allocate an array of the removed ones). */
function dropFirst<T>(a: T[], n: number): void {
  const len = a.length;
  for (let i = n; i < len; i++) a[i - n] = a[i] as T;
  a.length = len - n;
}

/** The view of a CountWindow; one instance per operator, pointed at a window before each use. */
class ArrayWindow implements WindowView {
  private w: CountWindow = { ts: [], ids: null };
  of(w: CountWindow): this {
    this.w = w;
    return this;
  }
  get length(): number {
    return this.w.ts.length;
  }
  tsAt(i: number): number {
    return this.w.ts[i] as number;
  }
  idAt(i: number): string | number | null {
    const ids = this.w.ids;
    return ids === null ? null : (ids[i] ?? null);
  }
  evictUpTo(horizon: number): void {
    const w = this.w;
    let first = 0;
    while (first < w.ts.length && (w.ts[first] as number) <= horizon) first++;
    if (first > 0) {
      dropFirst(w.ts, first);
      if (w.ids !== null) dropFirst(w.ids, first);
    }
  }
  push(ts: number, id: string | number | null): void {
    const w = this.w;
    if (w.ids === null && id !== null) w.ids = new Array<string | number | null>(w.ts.length).fill(null);
    w.ts.push(ts);
    w.ids?.push(id);
  }
  insert(ts: number, id: string | number | null): number {
    const w = this.w;
    let at = w.ts.length;
    while (at > 0 && (w.ts[at - 1] as number) > ts) at--;
    if (at === w.ts.length) {
      this.push(ts, id);
      return at;
    }
    if (w.ids === null && id !== null) w.ids = new Array<string | number | null>(w.ts.length).fill(null);
    w.ts.splice(at, 0, ts);
    w.ids?.splice(at, 0, id);
    return at;
  }
}

/** Namespace of the timers that release `ordered` records once the watermark passes them. */
const RELEASE_TIMER = "release";

/** The alert for a record of `key` at `ts` counting the window entries [from, to). */
function alert(key: Key | null, value: JsonObject, ts: number, w: WindowView, from: number, to: number, out: Collector): void {
  // Sized up front: pushing onto [] allocated a backing store of 17 and left it there.
  const lo = Math.max(from, to - EVIDENCE_CAP);
  const refs = new Array<EvidenceRef>(to - lo);
  for (let i = lo; i < to; i++) {
    const id = w.idAt(i);
    const t = w.tsAt(i);
    refs[i - lo] = id === null ? { ts: t } : { id, ts: t };
  }
  // refs is fresh and already capped: it becomes the evidence as is (evidenceOf would copy it).
  const evidence: Evidence = { records: refs, total: to - from };
  out.output({ key, ts, count: to - from, event: value, evidence }, ts);
}

/**
 * `ordered`, both storages: counts the released records values[from..to) of one key, all at `ts`
 * (later than every entry of the window), together, and alerts for each when the count reaches
 * the threshold. Records come here in timestamp order, so the window is sorted and eviction is a prefix.
 */
function countGroup(params: VelocityParams, key: Key | null, w: WindowView, ts: number, values: readonly JsonObject[], from: number, to: number, out: Collector): void {
  w.evictUpTo(ts - params.windowMs);
  for (let k = from; k < to; k++) w.push(ts, idOf(values[k] as JsonObject, params.idField));
  if (w.length >= params.threshold) {
    for (let k = from; k < to; k++) alert(key, values[k] as JsonObject, ts, w, 0, w.length, out);
  }
}

function idOf(value: JsonObject, idField: string): string | number | null {
  const id = readField(value, idField);
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/** The window and the cleanup timer, shared by both modes. */
abstract class VelocityBase implements Operator {
  protected state!: ValueState<KeyWindow>;
  protected readonly view = new ArrayWindow();

  constructor(protected readonly params: VelocityParams) {}

  open(ctx: RuntimeContext): void {
    // State TTL 2 × windowMs, as the seeds prescribe, beside the cleanup timer (which frees a silent
    // key exactly and earlier). Timers judge TTL at their own time, so end of input (+∞) loses nothing.
    this.state = ctx.getValueState(valueState<KeyWindow>(VELOCITY_STATE, { ttlMs: 2 * this.params.windowMs }));
  }

  abstract processElement(record: StreamRecord, ctx: ProcessContext): void;

  protected idOf(value: JsonObject): string | number | null {
    return idOf(value, this.params.idField);
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

  protected alert(value: JsonObject, ts: number, w: KeyWindow, from: number, to: number, ctx: ProcessContext): void {
    alert(ctx.key ?? null, value, ts, this.view.of(w), from, to, ctx);
  }
}

/**
 * `ordered` on any backend: each record waits in its key's state with a release timer at its
 * timestamp, and is counted when the timer fires; equal timestamps count each other.
 */
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

  private countGroup(w: KeyWindow, ts: number, values: readonly JsonObject[], from: number, to: number, ctx: ProcessContext): void {
    countGroup(this.params, ctx.key ?? null, this.view.of(w), ts, values, from, to, ctx);
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
    this.view.of(w).evictUpTo(watermark - this.params.windowMs);
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

/** The name of velocity's keyed state, on both storages (part of the checkpoint format). */
const VELOCITY_STATE = "velocity";

/** The backend chooses the storage when the operator opens: slots on the heap, state handles elsewhere. */
function byStorage(onHeap: () => Operator, onHandles: () => Operator): Operator {
  let impl: Operator;
  return {
    open(ctx) {
      impl = ctx.adoptState !== undefined ? onHeap() : onHandles();
      impl.open?.(ctx);
    },
    processElement: (record, ctx) => impl.processElement(record, ctx),
    // The heap storage buffers a batch in one loop (no host call per record); the handle storage
    // takes the records one by one, as the host would hand them.
    processBatch: (records, from, to, ctx) => {
      if (impl.processBatch !== undefined) impl.processBatch(records, from, to, ctx);
      else
        for (let i = from; i < to; i++) {
          const record = records[i] as StreamRecord;
          ctx.enter(record);
          impl.processElement(record, ctx);
        }
    },
    onTimer: (timer, ctx) => impl.onTimer?.(timer, ctx),
    onWatermark: (watermark, ctx) => impl.onWatermark?.(watermark, ctx),
  };
}

/**
 * Records of one timestamp waiting for the watermark, in arrival order: the first `n` of the arrays.
 * Released buckets are reused (their entries cleared): a bucket lives about maxOutOfOrdernessMs,
 * long enough to be promoted by the collector, and fresh ones made most of its old-space garbage.
 */
interface PendingAt {
  /** The records' timestamp (TimeBucket). */
  at: number;
  keys: Array<Key | undefined>;
  values: Array<JsonObject | undefined>;
  n: number;
}

/** A key's records waiting for the watermark, in release order: their timestamps and values. */
interface WaitingRecords {
  ts: number[];
  values: JsonObject[];
}

/** Released buckets kept for reuse: more than the timestamps a second of out-of-orderness holds at 1 ms. */
const SPARE_BUCKETS = 4096;

/** Doubles per slot row: [count, cleanupAt (NaN: none), mode], then the timestamps, ascending. */
const ROW_HEAD = 3;
/** Timestamps a row holds (16 doubles a row: two cache lines); a key with more spills (ROW_SPILLED). */
const ROW_TS = 13;
const ROW = ROW_HEAD + ROW_TS;
/**
 * Row modes: timestamps only; timestamps and an ids array (`ids`); spilled to an ArrayWindow
 * (`spilled`); timestamps and their ids as bytes in the row's id area (./row-ids.ts).
 */
const ROW_PLAIN = 0;
const ROW_IDS = 1;
const ROW_SPILLED = 2;
const ROW_ID_BYTES = 3;

/** Rows per page (2^12 rows of 16 doubles: 512 KB); the first page grows to it by doubling. */
const PAGE_BITS = 12;
const PAGE_SLOTS = 1 << PAGE_BITS;
const PAGE_MASK = PAGE_SLOTS - 1;

/** What the row's mode says is beside it: the ids array (ROW_IDS) or the spilled window (ROW_SPILLED). */
type RowExtra = Array<string | number | null> | CountWindow;

/** packStored's bytes besides the entries: the field names, headers, cleanupAt and t. */
const STORED_HEAD_BYTES = 96;

/**
 * Drops a row's timestamps at or before `horizon` (a prefix: they are ascending) and returns how
 * many; the caller drops their ids. A loop: copyWithin's call costs more than moving a dozen doubles.
 */
function evictRow(page: Float64Array, base: number, horizon: number): number {
  const start = base + ROW_HEAD;
  const n = page[base] as number;
  let first = 0;
  while (first < n && (page[start + first] as number) <= horizon) first++;
  if (first === 0) return 0;
  for (let i = first; i < n; i++) page[start + i - first] = page[start + i] as number;
  page[base] = n - first;
  return first;
}

/** A page of rows whose windows are empty (count 0, no cleanup, plain). */
function emptyPage(slots: number): Float64Array {
  const page = stateFloat64Array(slots * ROW);
  for (let b = 0; b < page.length; b += ROW) page[b + 1] = NaN;
  return page;
}

/**
 * The heap storage's windows, one row of doubles per key slot: counting a key reads one row (no
 * per-key object, array or array header to chase, nothing for the collector to mark), and the
 * row's mode says whether anything else is to be read. Ids, when records have them, are bytes in
 * the row's id area (./row-ids.ts), or a per-slot array parallel to the row for ids the area cannot
 * hold; a key with more than ROW_TS records in its window moves, until it is freed, to an
 * ArrayWindow. The view methods act on the slot chosen by `at`.
 *
 * Rows live in pages of PAGE_SLOTS rather than one array grown by doubling: a million keys' rows
 * are 128 MB, and each doubling copied them and held the old and the new array at once (384 MB at
 * the step to 2 M slots). A page is added without a copy. (Measured: no change in throughput; the
 * two full collections per run of the 1 M-key bench come from the state's growth either way.)
 */
class RowWindows implements WindowView {
  private pages: Float64Array[] = [emptyPage(64)];
  /**
   * Per page, the extras of its slots, created with the page's first: as long as a page, so that
   * writes at any slot stay in fast elements (written at random slots of a growing [], the arrays
   * turned into dictionaries), and absent for pages whose rows need none.
   */
  private extras: Array<Array<RowExtra | undefined> | undefined> = [undefined];
  /** Per page, its rows' id areas (ID_AREA_BYTES a row), created when a row of the page first needs one. */
  private idPages: Array<Uint8Array | undefined> = [undefined];
  private readonly spill = new ArrayWindow();
  /** The page and row base of the slot chosen by `at`. */
  private page: Float64Array = this.pages[0] as Float64Array;
  private base = 0;
  private slot = 0;
  /** The ids of the slot chosen by `at` in ROW_IDS mode, else null. */
  private slotIds: Array<string | number | null> | null = null;
  /** The id areas' page and the area of the slot chosen by `at` in ROW_ID_BYTES mode (else null). */
  private idBytes: Uint8Array | null = null;
  private idArea = 0;
  /** The offset of entry idCursor in that area: an alert reads a window's ids in order. */
  private idCursor = 0;
  private idCursorOffset = FIRST_ID;

  /** Makes room for `capacity` slots (new rows are empty). */
  grow(capacity: number): void {
    const first = this.pages[0] as Float64Array;
    if (this.pages.length === 1 && first.length < PAGE_SLOTS * ROW && first.length < capacity * ROW) {
      const next = emptyPage(Math.min(PAGE_SLOTS, 2 ** Math.ceil(Math.log2(capacity))));
      next.set(first);
      this.pages[0] = next;
      if (this.page === first) this.page = next;
      const ids = this.idPages[0];
      if (ids !== undefined) {
        const grown = new Uint8Array(stateBuffer((next.length / ROW) * ID_AREA_BYTES));
        grown.set(ids);
        this.idPages[0] = grown;
        if (this.idBytes === ids) this.idBytes = grown;
      }
    }
    while (this.pages.length * PAGE_SLOTS < capacity) {
      this.pages.push(emptyPage(PAGE_SLOTS));
      this.extras.push(undefined);
      this.idPages.push(undefined);
    }
  }

  /** The id areas of the slot's page, created on first use. */
  private idPageOf(slot: number): Uint8Array {
    const p = slot >> PAGE_BITS;
    let ids = this.idPages[p];
    if (ids === undefined) {
      ids = new Uint8Array(stateBuffer(((this.pages[p] as Float64Array).length / ROW) * ID_AREA_BYTES));
      this.idPages[p] = ids;
    }
    return ids;
  }

  /** The ids of a row in ROW_ID_BYTES mode, as an array. */
  private idsOf(slot: number, n: number): Array<string | number | null> {
    return readIds(this.idPages[slot >> PAGE_BITS] as Uint8Array, (slot & PAGE_MASK) * ID_AREA_BYTES, n);
  }

  /**
   * Writes `ids` into the slot's id area and marks the row ROW_ID_BYTES; false, with the row
   * unchanged, when one of them has no byte form or they do not fit.
   */
  private writeIdBytes(slot: number, ids: ReadonlyArray<string | number | null>): boolean {
    // A page's id areas are not created for ids that have no byte form (a restore of non-ASCII ids).
    const page = this.idPages[slot >> PAGE_BITS] ?? (ids.every((id) => idEntryBytes(id) >= 0) ? this.idPageOf(slot) : undefined);
    if (page === undefined || !fillIds(page, (slot & PAGE_MASK) * ID_AREA_BYTES, ids)) return false;
    (this.pages[slot >> PAGE_BITS] as Float64Array)[(slot & PAGE_MASK) * ROW + 2] = ROW_ID_BYTES;
    return true;
  }

  private extraOf(slot: number): RowExtra | undefined {
    return this.extras[slot >> PAGE_BITS]?.[slot & PAGE_MASK];
  }
  private setExtra(slot: number, extra: RowExtra | undefined): void {
    let list = this.extras[slot >> PAGE_BITS];
    if (list === undefined) {
      if (extra === undefined) return;
      list = new Array<RowExtra | undefined>(PAGE_SLOTS).fill(undefined);
      this.extras[slot >> PAGE_BITS] = list;
    }
    list[slot & PAGE_MASK] = extra;
  }

  /** Points the view at a slot's window: the row, or the slot's spilled window. */
  at(slot: number): WindowView {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    const mode = page[base + 2];
    if (mode === ROW_SPILLED) return this.spill.of(this.extraOf(slot) as CountWindow);
    this.slot = slot;
    this.page = page;
    this.base = base;
    this.slotIds = mode === ROW_IDS ? (this.extraOf(slot) as Array<string | number | null>) : null;
    this.pointIdBytes(mode === ROW_ID_BYTES ? (this.idPages[slot >> PAGE_BITS] as Uint8Array) : null);
    return this;
  }

  cleanupAt(slot: number): number {
    return (this.pages[slot >> PAGE_BITS] as Float64Array)[(slot & PAGE_MASK) * ROW + 1] as number;
  }
  setCleanupAt(slot: number, time: number): void {
    (this.pages[slot >> PAGE_BITS] as Float64Array)[(slot & PAGE_MASK) * ROW + 1] = time;
  }
  /** The slot's latest entry's time, NaN when its window is empty (a double either way, which the optimizer keeps unboxed). */
  lastTs(slot: number): number {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    if (page[base + 2] === ROW_SPILLED) return (this.extraOf(slot) as CountWindow).ts.at(-1) ?? NaN;
    const n = page[base] as number;
    return n === 0 ? NaN : (page[base + ROW_HEAD + n - 1] as number);
  }

  /**
   * The common case of a released record in one pass over its row: a plain row (no ids, not
   * spilled) takes a record without an id at `ts` (later than every entry) after evicting the
   * entries at or before `horizon`. Returns the window's new length, or -1 when the row is not
   * plain or is full after eviction (then reserve, evictUpTo and push do it; the eviction done
   * here is what theirs would do).
   */
  appendPlain(slot: number, ts: number, horizon: number): number {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    if (page[base + 2] !== ROW_PLAIN) return -1;
    evictRow(page, base, horizon);
    const n = page[base] as number;
    if (n === ROW_TS) return -1;
    page[base + ROW_HEAD + n] = ts;
    page[base] = n + 1;
    return n + 1;
  }

  /** Readies a slot to take `extra` more entries: evicts, and spills when the row would overflow. */
  reserve(slot: number, extra: number, horizon: number): WindowView {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    if ((page[base] as number) + extra > ROW_TS && page[base + 2] !== ROW_SPILLED) {
      this.at(slot);
      this.evictUpTo(horizon);
      if ((page[base] as number) + extra > ROW_TS) {
        this.setExtra(slot, this.windowOf(slot));
        page[base] = 0;
        page[base + 2] = ROW_SPILLED;
      }
    }
    return this.at(slot);
  }

  /** A copy of the slot's window as arrays (ids null when none has one). */
  windowOf(slot: number): CountWindow {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    const mode = page[base + 2];
    if (mode === ROW_SPILLED) {
      const w = this.extraOf(slot) as CountWindow;
      return { ts: [...w.ts], ids: w.ids === null ? null : [...w.ids] };
    }
    const ts = Array.from(page.subarray(base + ROW_HEAD, base + ROW_HEAD + (page[base] as number)));
    if (mode === ROW_ID_BYTES) return { ts, ids: this.idsOf(slot, ts.length) };
    return { ts, ids: mode === ROW_IDS ? [...(this.extraOf(slot) as Array<string | number | null>)] : null };
  }

  /** Sets a free slot's window (restore; takes the arrays). */
  load(slot: number, w: CountWindow): void {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    page[base + 1] = NaN;
    if (w.ts.length > ROW_TS) {
      this.setExtra(slot, w);
      page[base] = 0;
      page[base + 2] = ROW_SPILLED;
      return;
    }
    page.set(w.ts, base + ROW_HEAD);
    page[base] = w.ts.length;
    page[base + 2] = ROW_PLAIN;
    if (w.ids === null || this.writeIdBytes(slot, w.ids)) return;
    this.setExtra(slot, w.ids);
    page[base + 2] = ROW_IDS;
  }

  /** Empties a slot's window (its key is freed). */
  free(slot: number): void {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    if (page[base + 2] !== ROW_PLAIN) this.setExtra(slot, undefined);
    page[base] = 0;
    page[base + 1] = NaN;
    page[base + 2] = ROW_PLAIN;
  }

  bytes(): number {
    let bytes = 0;
    for (const page of this.pages) bytes += page.byteLength;
    for (const ids of this.idPages) bytes += ids?.byteLength ?? 0;
    for (const list of this.extras) {
      if (list === undefined) continue;
      bytes += 8 * list.length;
      for (const e of list) {
        if (Array.isArray(e)) bytes += estimateBytes(e);
        else if (e !== undefined) bytes += 16 * e.ts.length + estimateBytes(e.ids);
      }
    }
    return bytes;
  }

  /**
   * Writes the slot's stored form with no pending records (SlotWindows.stored's, for `eager`) into
   * `w`: the same bytes packValueView gives for that object, without building it. Undefined for a
   * spilled window or an id ValueWriter cannot write (the caller packs the object instead).
   */
  packStored(slot: number, w: ValueWriter): Uint8Array | undefined {
    const page = this.pages[slot >> PAGE_BITS] as Float64Array;
    const base = (slot & PAGE_MASK) * ROW;
    const mode = page[base + 2];
    if (mode === ROW_SPILLED) return undefined;
    const n = page[base] as number;
    const ids = mode === ROW_IDS ? (this.extraOf(slot) as Array<string | number | null>) : null;
    w.begin(STORED_HEAD_BYTES + n * (MAX_NUMBER_BYTES + MAX_STR_BYTES));
    w.map(2);
    w.str("v");
    w.map(5);
    w.str("ts");
    w.numbers(page, base + ROW_HEAD, base + ROW_HEAD + n);
    w.str("ids");
    if (mode === ROW_ID_BYTES) {
      if (!writeIds(this.idPages[slot >> PAGE_BITS] as Uint8Array, (slot & PAGE_MASK) * ID_AREA_BYTES, n, w)) {
        w.abandon();
        return undefined;
      }
    } else {
      w.array(n);
      for (let i = 0; i < n; i++) {
        const id = ids === null ? null : (ids[i] ?? null);
        if (id === null) w.nil();
        else if (typeof id === "number") w.number(id);
        else if (!w.str(id)) {
          w.abandon();
          return undefined;
        }
      }
    }
    w.str("pendingTs");
    w.nil();
    w.str("pendingValues");
    w.nil();
    w.str("cleanupAt");
    const cleanupAt = page[base + 1] as number;
    if (Number.isNaN(cleanupAt)) w.nil();
    else w.number(cleanupAt);
    w.str("t");
    w.number(n === 0 ? Number.NEGATIVE_INFINITY : (page[base + ROW_HEAD + n - 1] as number));
    return w.end();
  }

  // ---- WindowView over the row chosen by `at` (never a spilled slot)

  get length(): number {
    return this.page[this.base] as number;
  }
  tsAt(i: number): number {
    return this.page[this.base + ROW_HEAD + i] as number;
  }
  idAt(i: number): string | number | null {
    if (this.slotIds !== null) return this.slotIds[i] ?? null;
    const bytes = this.idBytes;
    if (bytes === null) return null;
    if (i < this.idCursor) this.pointIdBytes(bytes);
    const off = idOffset(bytes, this.idArea, i, this.idCursor, this.idCursorOffset);
    this.idCursor = i;
    this.idCursorOffset = off;
    return readId(bytes, this.idArea, off);
  }

  /** Points the id view at the chosen slot's area in `bytes` (null: not ROW_ID_BYTES), its cursor at the first entry. */
  private pointIdBytes(bytes: Uint8Array | null): void {
    this.idBytes = bytes;
    this.idArea = (this.slot & PAGE_MASK) * ID_AREA_BYTES;
    this.idCursor = 0;
    this.idCursorOffset = FIRST_ID;
  }
  evictUpTo(horizon: number): void {
    const first = evictRow(this.page, this.base, horizon);
    if (first === 0) return;
    if (this.slotIds !== null) dropFirst(this.slotIds, first);
    else if (this.idBytes !== null) {
      dropIds(this.idBytes, this.idArea, first);
      this.pointIdBytes(this.idBytes);
    }
  }
  push(ts: number, id: string | number | null): void {
    this.insertAt(this.page[this.base] as number, ts, id);
  }
  insert(ts: number, id: string | number | null): number {
    const rows = this.page;
    const start = this.base + ROW_HEAD;
    let at = rows[this.base] as number;
    while (at > 0 && (rows[start + at - 1] as number) > ts) at--;
    this.insertAt(at, ts, id);
    return at;
  }
  /** Puts the entry at index `at` of the chosen row, shifting the later ones up. */
  private insertAt(at: number, ts: number, id: string | number | null): void {
    const rows = this.page;
    const start = this.base + ROW_HEAD;
    const n = rows[this.base] as number;
    if (at < n) rows.copyWithin(start + at + 1, start + at, start + n);
    rows[start + at] = ts;
    rows[this.base] = n + 1;
    if (this.slotIds === null) {
      const size = idEntryBytes(id);
      if (this.idBytes !== null) {
        this.pointIdBytes(this.idBytes);
        if (size >= 0 && insertId(this.idBytes, this.idArea, at, n, id, size)) return;
        this.slotIds = readIds(this.idBytes, this.idArea, n); // no room, or an id with no byte form: an array from now on
        this.pointIdBytes(null);
      } else {
        if (id === null) return;
        if (size >= 0) {
          const bytes = this.idPageOf(this.slot);
          this.pointIdBytes(bytes);
          resetIds(bytes, this.idArea, n); // the entries so far had no ids
          if (insertId(bytes, this.idArea, at, n, id, size)) {
            rows[this.base + 2] = ROW_ID_BYTES;
            return;
          }
          this.pointIdBytes(null);
        }
        this.slotIds = new Array<string | number | null>(n).fill(null);
      }
      this.setExtra(this.slot, this.slotIds);
      rows[this.base + 2] = ROW_IDS;
    }
    if (at === n) this.slotIds.push(id);
    else this.slotIds.splice(at, 0, id);
  }

  /**
   * Reads every cache line of the rows of slots[0, n), skipping negative slots: a stage of
   * independent loads whose cache misses overlap, ahead of the work on those rows. A row is 128
   * bytes, but a page's buffer is aligned to 16 bytes only (node allocates it with calloc), so a row
   * spans three lines; its first and last doubles missed the middle one, which holds a key's
   * timestamps from about the fourth on (+2.5 % on the 1 M-key bench). Returns what it read (keep
   * it, so that the compiler keeps the reads).
   */
  touchRows(slots: Int32Array, n: number): number {
    const pages = this.pages;
    let touched = 0;
    for (let i = 0; i < n; i++) {
      const slot = slots[i] as number;
      if (slot < 0) continue;
      const page = pages[slot >> PAGE_BITS] as Float64Array;
      const b = (slot & PAGE_MASK) * ROW;
      touched += (page[b] as number) + (page[b + ROW / 2] as number) + (page[b + ROW - 1] as number);
    }
    return touched;
  }
}

/**
 * What both modes keep on the heap backend: keys -> slots (KeySlots), each slot's window as a row
 * (RowWindows), and the slots by cleanup time (last record + windowMs, as the handle storage's
 * cleanup timer) in a schedule rather than a timer per key. `changed` hears of every slot whose
 * stored form a cleanup changes (eager's change-reporting table).
 */
class SlotWindows {
  readonly slots = new KeySlots();
  readonly windows = new RowWindows();
  private readonly cleanups = new SlotSchedule(0);
  /** The slots a due cleanup frees (reused). */
  private freed = new Int32Array(64);
  /** What the staged loops read, kept so that the compiler keeps the reads. */
  touched = 0;

  constructor(
    private readonly windowMs: number,
    private readonly changed?: (slot: number) => void,
  ) {}

  /** Schedules the slot's cleanup at its last record + windowMs, unless one is scheduled. */
  ensureCleanup(slot: number): void {
    const last = this.windows.lastTs(slot);
    if (!Number.isNaN(last)) this.ensureCleanupAfter(slot, last);
  }

  /**
   * ensureCleanup when the slot's last record is known to be at `last` (ordered release: the one
   * just counted): reading it back from the row per record cost the 1 M-key bench ~3 % (paired).
   */
  ensureCleanupAfter(slot: number, last: number): void {
    if (Number.isNaN(this.windows.cleanupAt(slot))) {
      const at = last + this.windowMs;
      this.windows.setCleanupAt(slot, at);
      this.cleanups.add(slot, at);
    }
  }

  /** The watermark reached `watermark`: frees the slots whose windows went silent, re-arms the others due. */
  cleanUp(watermark: number): void {
    const windows = this.windows;
    const table = this.slots;
    this.cleanups.dueLists(watermark, (list, n) => {
      // In stages, as release: the rows of a time's slots first (cache misses in random order,
      // overlapping when read back to back), then which to free; then the freed slots' hashes and
      // their table positions, each stage's loads independent; the deletes then find them in cache.
      let touched = windows.touchRows(list, n);
      if (n > this.freed.length) this.freed = new Int32Array(2 ** Math.ceil(Math.log2(n)));
      const freed = this.freed;
      let m = 0;
      for (let i = 0; i < n; i++) {
        const slot = list[i] as number;
        const cleanupAt = windows.cleanupAt(slot);
        // NaN (none scheduled: freed, or the slot reused) fails both comparisons.
        if (!(cleanupAt <= watermark)) continue;
        windows.setCleanupAt(slot, NaN);
        const last = windows.lastTs(slot);
        // Freed below, in this order (the order of the free slots handed out next); a slot listed
        // twice is skipped the second time, its cleanupAt being NaN by then.
        if (Number.isNaN(last) || last + this.windowMs <= watermark) freed[m++] = slot;
        else this.ensureCleanupAfter(slot, last);
        this.changed?.(slot);
      }
      for (let i = 0; i < m; i++) touched += table.hashAt(freed[i] as number);
      for (let i = 0; i < m; i++) touched += table.touch(freed[i] as number);
      this.touched = touched;
      for (let i = 0; i < m; i++) {
        const slot = freed[i] as number;
        windows.free(slot);
        table.delete(slot);
      }
    });
  }

  /** The slot's stored form (the handle storage's KeyWindow, TTL stamp included), with the key's waiting records. */
  stored(slot: number, p: WaitingRecords | undefined): TtlEntry<KeyWindow> {
    const w = slot >= 0 ? this.windows.windowOf(slot) : { ts: [], ids: null };
    const cleanupAt = slot >= 0 ? this.windows.cleanupAt(slot) : NaN;
    const ids = w.ids ?? new Array<string | number | null>(w.ts.length).fill(null);
    const v: KeyWindow = { ts: w.ts, ids, pendingTs: p?.ts ?? null, pendingValues: p?.values ?? null, cleanupAt: Number.isNaN(cleanupAt) ? null : cleanupAt };
    // The TTL stamp: the latest time the handle storage would have written the entry at.
    const last = Math.max(v.ts[v.ts.length - 1] ?? Number.NEGATIVE_INFINITY, ...(p?.ts ?? []));
    return { v, t: last };
  }

  /** Restores a stored window (a restored key gets its cleanup scheduled anew); returns its slot, or -1 when it holds none. */
  load(key: Key, v: KeyWindow): number {
    if (v.ts.length === 0) return -1;
    const slot = this.slots.findOrAdd(key);
    this.windows.grow(this.slots.capacity);
    this.windows.load(slot, { ts: [...v.ts], ids: v.ids.some((id) => id !== null) ? [...v.ids] : null });
    this.ensureCleanup(slot);
    return slot;
  }

  bytes(): number {
    return this.slots.bytes() + this.windows.bytes();
  }
}

/**
 * `ordered` on the heap backend: the same counting (countGroup) with no timer and no state access
 * on arrival. Records wait in one buffer per operator, bucketed by timestamp, and are released
 * timestamp by timestamp when the watermark passes them; their alerts leave in (timestamp, key,
 * canonical JSON) order, the order in which the handle storage's release timers fire, so both
 * storages emit the same sequence (release says when the counting itself needs that order). Each
 * key's window is a row of doubles by slot (KeySlots and RowWindows: no Map entry, no TTL wrapper, no per-key
 * object), and a silent key is freed at last record + windowMs, as by the handle storage's cleanup
 * timer, from a schedule of slots by time (no key strings, no ordering within a time), well inside
 * the 2 × windowMs state TTL. The backend snapshots the same table as the handle storage writes
 * ("velocity": per key, its window and waiting records), so checkpoints stay per key and rescale as before.
 */
class SlotOrderedVelocity extends OperatorKeptTable implements Operator {
  readonly name = VELOCITY_STATE;
  readonly kind = "value" as const;
  private readonly heap: SlotWindows;
  private readonly slots: KeySlots;
  private readonly windows: RowWindows;
  /** Waiting records, a bucket per timestamp. */
  private readonly pending = new TimeBuckets<PendingAt>((at) => ({ at, keys: [], values: [], n: 0 }), SPARE_BUCKETS);
  /** Scratch arrays a timestamp's keys and values are sorted into (reused; at most one timestamp's records). */
  private readonly sortedKeys: Key[] = [];
  private readonly sortedValues: JsonObject[] = [];
  /** release's slot of each sorted record. */
  private slotOf = new Int32Array(64);
  private sortedSlots = new Int32Array(64);
  /** release's hashKey of each record's key. */
  private hashes = new Int32Array(64);
  private readonly releaseOrder = new ReleaseOrder();
  private readonly repeated = new RepeatedSlots();
  /**
   * pendingByKey()'s index, built at the first checkpoint or materialization that asks and then
   * kept up to date by buffer() and release(), a Map operation per record: rebuilt from the
   * buffer it cost a pass over every waiting record each time, and materialization asks between
   * batches that change the buffer.
   */
  private pendingIndex: Map<Key, WaitingRecords> | undefined;
  /**
   * The table's packed snapshot columns, kept between checkpoints: every change of a key's stored
   * form is reported (a record waiting, a release, a cleanup), so that a checkpoint packs only the
   * keys changed since the last one. Packing every key at every checkpoint took 4.7 s at 864 k keys.
   */
  private readonly kept = new KeptColumns(VELOCITY_STATE, "value");
  /** Checkpoints write windows with no waiting records straight from their rows. */
  private readonly writer = new ValueWriter();

  constructor(private readonly params: VelocityParams) {
    super();
    this.heap = new SlotWindows(params.windowMs, (slot) => this.changed(this.slots.keyAt(slot) as Key));
    this.slots = this.heap.slots;
    this.windows = this.heap.windows;
  }

  /** The key's stored form changed (see kept). */
  private changed(key: Key): void {
    this.kept.touched(key, this.slots.size);
  }

  open(ctx: RuntimeContext): void {
    ctx.adoptState?.(this);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const ts = record.timestamp;
    if (ts <= ctx.timerService.currentWatermark()) {
      ctx.sideOutput("late", record.value, ts);
      return;
    }
    this.buffer(ts, ctx.key as Key, record.value);
  }

  /** processElement on each record in turn: the watermark does not move within a batch. */
  processBatch(records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void {
    const watermark = ctx.timerService.currentWatermark();
    for (let i = from; i < to; i++) {
      const record = records[i] as StreamRecord;
      const ts = record.timestamp;
      if (ts <= watermark) {
        ctx.enter(record);
        ctx.sideOutput("late", record.value, ts);
      } else this.buffer(ts, record.key as Key, record.value);
    }
  }

  private buffer(ts: number, key: Key, value: JsonObject): void {
    this.changed(key);
    if (this.pendingIndex !== undefined) indexPending(this.pendingIndex, key, ts, value);
    const at = this.pending.of(ts);
    at.keys[at.n] = key;
    at.values[at.n] = value;
    at.n++;
  }

  onWatermark(watermark: number, ctx: WatermarkContext): void {
    const pending = this.pending;
    for (let ts = pending.oldestTime(); ts !== undefined && ts <= watermark; ts = pending.oldestTime()) {
      const at = pending.takeOldest();
      this.release(ts, at, ctx);
      for (let i = 0; i < at.n; i++) {
        at.keys[i] = undefined;
        at.values[i] = undefined;
      }
      at.n = 0;
      pending.recycle(at);
    }
    this.heap.cleanUp(watermark);
  }

  /**
   * Counts the records of one timestamp and emits their alerts by key, then canonical JSON (as
   * sortPending): releaseEach when no key repeats among them, else releaseSorted.
   */
  private release(ts: number, at: PendingAt, ctx: WatermarkContext): void {
    const n = at.n;
    // Every key's slot and row first, in arrival order, then the counting: the lookups and row loads
    // (cache misses over a million keys) of different keys then overlap instead of queueing one by
    // one, and sorting then reads keys already in cache.
    // In stages (KeySlots.prefetch's, then the rows), each a loop whose loads do not depend on one
    // another, so that each stage's misses overlap.
    if (n > this.slotOf.length) {
      this.slotOf = new Int32Array(2 ** Math.ceil(Math.log2(n)));
      this.sortedSlots = new Int32Array(this.slotOf.length);
      this.hashes = new Int32Array(this.slotOf.length);
    }
    const slotOf = this.slotOf;
    const hashes = this.hashes;
    const table = this.slots;
    const touched = table.prefetch(at.keys as readonly Key[], n, hashes, slotOf);
    for (let i = 0; i < n; i++) {
      const slot = table.findOrAddHashed(at.keys[i] as Key, hashes[i] as number);
      if (table.added) this.windows.grow(table.capacity);
      slotOf[i] = slot;
    }
    this.heap.touched = touched + this.windows.touchRows(slotOf, n);
    if (n > 1 && this.repeated.any(slotOf, n)) this.releaseSorted(ts, at, ctx);
    else this.releaseEach(ts, at, ctx);
  }

  /**
   * release() when no key has two of the records: each goes into its key's window in arrival order
   * (windows are per key, so the order among keys decides only the order of the alerts), and only
   * the records that alert are sorted into release order before they are emitted. Sorting every
   * record was 8 % of the 1 M-key bench; most records of a real rule do not alert.
   */
  private releaseEach(ts: number, at: PendingAt, ctx: WatermarkContext): void {
    const n = at.n;
    const slotOf = this.slotOf;
    const windows = this.windows;
    const horizon = ts - this.params.windowMs;
    const threshold = this.params.threshold;
    const idField = this.params.idField;
    const index = this.pendingIndex;
    const keys = this.sortedKeys;
    const values = this.sortedValues;
    const slots = this.sortedSlots;
    let m = 0;
    for (let i = 0; i < n; i++) {
      const key = at.keys[i] as Key;
      const value = at.values[i] as JsonObject;
      const slot = slotOf[i] as number;
      this.changed(key);
      if (index !== undefined) unindexPending(index, key, 1);
      const id = idOf(value, idField);
      let length = id === null ? windows.appendPlain(slot, ts, horizon) : -1;
      if (length < 0) {
        const w = windows.reserve(slot, 1, horizon);
        w.evictUpTo(horizon);
        w.push(ts, id);
        length = w.length;
      }
      // The key's only record of this timestamp: its window is complete for it.
      if (length >= threshold) {
        keys[m] = key;
        values[m] = value;
        slots[m] = slot;
        m++;
      }
      this.heap.ensureCleanupAfter(slot, ts);
    }
    if (m === 0) return;
    const order = m > 1 ? this.releaseOrder.sort(keys, values, m) : undefined;
    for (let i = 0; i < m; i++) {
      const o = order === undefined ? 0 : (order[i] as number);
      const key = keys[o] as Key;
      const w = windows.at(slots[o] as number);
      alert(key, values[o] as JsonObject, ts, w, 0, w.length, ctx.forKey(key));
    }
  }

  /** release() when a key has several of the records: all in release order, a key's together (countGroup). */
  private releaseSorted(ts: number, at: PendingAt, ctx: WatermarkContext): void {
    const n = at.n;
    const slotOf = this.slotOf;
    const keys = this.sortedKeys;
    const values = this.sortedValues;
    const slots = this.sortedSlots;
    const order = this.releaseOrder.sort(at.keys as Key[], at.values as JsonObject[], n);
    for (let i = 0; i < n; i++) {
      const o = order[i] as number;
      keys[i] = at.keys[o] as Key;
      values[i] = at.values[o] as JsonObject;
      slots[i] = slotOf[o] as number;
    }
    const horizon = ts - this.params.windowMs;
    const index = this.pendingIndex;
    for (let i = 0; i < n; ) {
      const key = keys[i] as Key;
      let j = i + 1;
      while (j < n && keys[j] === key) j++;
      this.changed(key);
      // The key's earliest waiting records are these (released in timestamp order).
      if (index !== undefined) unindexPending(index, key, j - i);
      const slot = slots[i] as number;
      countGroup(this.params, key, this.windows.reserve(slot, j - i, horizon), ts, values, i, j, ctx.forKey(key));
      this.heap.ensureCleanupAfter(slot, ts);
      i = j;
    }
  }

  // ---- the table the backend snapshots: the handle storage's stored form, TTL stamp included

  /**
   * Waiting records by key, in release order of their timestamps (arrival order within one), built
   * once and then kept up to date (pendingIndex): get() is called per key by snapshots, and
   * building this per call made a checkpoint quadratic (10 k keys with 100 k records waiting: 91 s).
   */
  private pendingByKey(): Map<Key, WaitingRecords> {
    if (this.pendingIndex !== undefined) return this.pendingIndex;
    const byKey = new Map<Key, WaitingRecords>();
    this.pendingIndex = byKey;
    for (const at of [...this.pending.values()].sort((a, b) => a.at - b.at)) {
      at.keys.slice(0, at.n).forEach((k, i) => {
        let p = byKey.get(k as Key);
        if (p === undefined) {
          p = { ts: [], values: [] };
          byKey.set(k as Key, p);
        }
        p.ts.push(at.at);
        p.values.push(at.values[i] as JsonObject);
      });
    }
    return byKey;
  }

  get(key: Key): unknown {
    const slot = this.slots.find(key);
    const p = this.pendingByKey().get(key);
    return slot < 0 && p === undefined ? undefined : this.heap.stored(slot, p);
  }
  /** The key's stored form packed from its row when no record of it waits (see StoredValues.packedValue); else undefined, and get()'s is packed. */
  packedValue(key: Key): Uint8Array | undefined {
    if (this.pending.size > 0 && this.pendingByKey().has(key)) return undefined;
    const slot = this.slots.find(key);
    return slot < 0 ? undefined : this.windows.packStored(slot, this.writer);
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
  /** The keys holding a window or waiting records, without building their stored form (state stats). */
  override *keys(): IterableIterator<Key> {
    for (const slot of this.slots.slots()) yield this.slots.keyAt(slot) as Key;
    const waitingOnly = new Set<Key>();
    for (const at of this.pending.values()) for (const key of at.keys.slice(0, at.n) as Key[]) if (this.slots.find(key) < 0) waitingOnly.add(key);
    yield* waitingOnly;
  }
  *entries(): IterableIterator<[Key, unknown]> {
    const byKey = this.pendingByKey();
    for (const slot of this.slots.slots()) {
      const key = this.slots.keyAt(slot) as Key;
      yield [key, this.heap.stored(slot, byKey.get(key))];
    }
    for (const [key, p] of byKey) if (this.slots.find(key) < 0) yield [key, this.heap.stored(-1, p)];
  }
  load(entries: ReadonlyArray<readonly [Key, unknown]>): void {
    for (const [key, stored] of entries) {
      const v = (stored as TtlEntry<KeyWindow>).v;
      this.heap.load(key, v);
      v.pendingTs?.forEach((ts, i) => this.buffer(ts, key, (v.pendingValues as JsonObject[])[i] as JsonObject));
    }
  }
  estimatedBytes(): number {
    let bytes = this.heap.bytes() + 32 * this.pending.size;
    for (const at of this.pending.values()) bytes += 16 * at.n + estimateBytes(at.values.slice(0, at.n) as JsonObject[]);
    return bytes;
  }
}

/** Adds a waiting record to the index by key: after the key's records of the same or an earlier timestamp (release order). */
function indexPending(index: Map<Key, WaitingRecords>, key: Key, ts: number, value: JsonObject): void {
  let p = index.get(key);
  if (p === undefined) index.set(key, (p = { ts: [], values: [] }));
  let at = p.ts.length;
  while (at > 0 && (p.ts[at - 1] as number) > ts) at--;
  if (at === p.ts.length) {
    p.ts.push(ts);
    p.values.push(value);
  } else {
    p.ts.splice(at, 0, ts);
    p.values.splice(at, 0, value);
  }
}

/** Drops the key's `n` earliest waiting records from the index (they were just released). */
function unindexPending(index: Map<Key, WaitingRecords>, key: Key, n: number): void {
  const p = index.get(key);
  if (p === undefined) return;
  if (n >= p.ts.length) {
    index.delete(key);
    return;
  }
  p.ts.splice(0, n);
  p.values.splice(0, n);
}

/** Records whose keys SlotEagerVelocity.processBatch looks up ahead of deciding them (as dedup's PREFETCH_CHUNK). */
const EAGER_CHUNK = 128;

/**
 * `eager` on the heap backend: EagerVelocity's decision on arrival, over SlotWindows (no Map entry,
 * TTL wrapper, timer or object per key). A batch's keys are looked up a chunk ahead, in stages whose
 * cache misses overlap. The adopted table reports each changed key, so that a checkpoint packs only
 * those (the handle storage's kept columns did the same), and holds the handle storage's stored form
 * and cleanup timers, so that checkpoints restore on either storage.
 */
class SlotEagerVelocity implements Operator {
  private readonly heap: SlotWindows;
  private table!: ChangeReportingSlotTableView;
  /** processBatch's chunk: its keys, their hashes, their table positions (then their slots). */
  private readonly chunkKeys: Key[] = [];
  private readonly hashes = new Int32Array(EAGER_CHUNK);
  private readonly slotOf = new Int32Array(EAGER_CHUNK);
  /** Checkpoints write the changed windows' stored forms with it, straight from their rows. */
  private readonly writer = new ValueWriter();

  constructor(private readonly params: VelocityParams) {
    this.heap = new SlotWindows(params.windowMs, (slot) => this.table.changed(this.heap.slots.keyAt(slot) as Key));
  }

  open(ctx: RuntimeContext): void {
    const heap = this.heap;
    const table = new LiveSlotTableView(VELOCITY_STATE, "value", heap.slots, (slot) => heap.stored(slot, undefined), (entries) => {
      // Waiting records belong to `ordered`; a restored eager window has none that count.
      for (const [key, stored] of entries) heap.load(key, (stored as TtlEntry<KeyWindow>).v);
      }, () => heap.bytes(), (slot) => heap.windows.packStored(slot, this.writer));
    this.table = (ctx.adoptState as NonNullable<RuntimeContext["adoptState"]>)(table);
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const watermark = ctx.timerService.currentWatermark();
    if (record.timestamp <= watermark) {
      ctx.sideOutput("late", record.value, record.timestamp);
      return;
    }
    const slots = this.heap.slots;
    const slot = slots.findOrAdd(ctx.key as Key);
    if (slots.added) this.heap.windows.grow(slots.capacity);
    this.decide(slot, record, watermark, ctx);
  }

  /** processElement on each record in turn, a chunk's slots and rows read first: the watermark does not move within a batch. */
  processBatch(records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void {
    const watermark = ctx.timerService.currentWatermark();
    const { slots, windows } = this.heap;
    const keys = this.chunkKeys;
    const hashes = this.hashes;
    const slotOf = this.slotOf;
    for (let f = from; f < to; f += EAGER_CHUNK) {
      const n = Math.min(to, f + EAGER_CHUNK) - f;
      for (let i = 0; i < n; i++) keys[i] = (records[f + i] as StreamRecord).key as Key;
      const touched = slots.prefetch(keys, n, hashes, slotOf);
      // Slots in arrival order, so that new keys get the slots processElement would give them
      // (nothing frees a slot within a batch); late records get none.
      for (let i = 0; i < n; i++) {
        if ((records[f + i] as StreamRecord).timestamp <= watermark) slotOf[i] = -1;
        else {
          slotOf[i] = slots.findOrAddHashed(keys[i] as Key, hashes[i] as number);
          if (slots.added) windows.grow(slots.capacity);
        }
      }
      this.heap.touched = touched + windows.touchRows(slotOf, n);
      for (let i = 0; i < n; i++) {
        const record = records[f + i] as StreamRecord;
        ctx.enter(record);
        const slot = slotOf[i] as number;
        if (slot < 0) ctx.sideOutput("late", record.value, record.timestamp);
        else this.decide(slot, record, watermark, ctx);
      }
    }
  }

  /** EagerVelocity.processElement on the slot's row: evict, insert in timestamp order, count, alert. */
  private decide(slot: number, record: StreamRecord, watermark: number, ctx: ProcessContext): void {
    const ts = record.timestamp;
    const windowMs = this.params.windowMs;
    // Entries at or before watermark − windowMs are outside every future on-time record's window.
    const horizon = watermark - windowMs;
    const w = this.heap.windows.reserve(slot, 1, horizon);
    w.evictUpTo(horizon);
    const at = w.insert(ts, idOf(record.value, this.params.idField));
    let from = at;
    while (from > 0 && w.tsAt(from - 1) > ts - windowMs) from--;
    if (at + 1 - from >= this.params.threshold) alert(ctx.key ?? null, record.value, ts, w, from, at + 1, ctx);
    this.heap.ensureCleanup(slot);
    this.table.changed(ctx.key as Key);
  }

  onWatermark(watermark: number): void {
    this.heap.cleanUp(watermark);
  }
}

/** A change-reporting table whose every live slot holds a value: its size and keys read the slots alone (metrics ask once a second). */
class LiveSlotTableView extends ChangeReportingSlotTableView {
  override get size(): number {
    return this.slots.size;
  }
  override *keys(): IterableIterator<Key> {
    for (const slot of this.slots.slots()) yield this.slots.keyAt(slot) as Key;
  }
}
