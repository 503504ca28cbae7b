// OperatorHost: runs one Operator instance (one subtask of one node) with its keyed state, timers,
// current key and watermark; Flink's AbstractStreamOperator plus its InternalTimeServiceManager.
import type {
  BatchContext,
  JsonObject,
  JsonValue,
  Key,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  Operator,
  ProcessContext,
  RuntimeContext,
  StateDescriptor,
  StateTtlConfig,
  StreamRecord,
  TimerService,
  ValueState,
  ValueStateDescriptor,
  WatermarkContext,
  Collector,
} from "./api";
import { MAX_WATERMARK, MIN_WATERMARK, errorOutput } from "./api";
import { DEFAULT_MAX_PARALLELISM, keyGroupOf, keyGroupRangeContains, type KeyGroupRange } from "./keys";
import type { ImpliedTimers, KeySelector, OperatorInit, OperatorServices, OperatorSpec } from "./spec";
import { decodeSnapshot, encodeSnapshotPieces, joinPieces, packValues, type PieceRef, type SnapshotPieces } from "./snapshot-codec";
import {
  ExpiryIndex,
  HeapKeyedStateBackend,
  PlainListState,
  PlainMapState,
  PlainValueState,
  TtlListState,
  TtlMapState,
  TtlValueState,
  type AdoptedTable,
  type KeyScope,
  type KeyedStateBackend,
  type MaterializeBudget,
  type StateKind,
  type StateTable,
  type TableSnapshot,
  type ColumnarTableSnapshot,
  type PackedTableSnapshot,
  type SnapshotHold,
  type ChangelogSnapshot,
  type DeltaTableSnapshot,
  columnsOf,
  tablesFromSnapshot,
} from "./state";
import { TimerQueue, timersFromSnapshot, type FiresTimerBatches, type TimerBatch, type TimersSnapshot } from "./timers";

/** Where a host's output goes: one call per emitted record, in emission order. */
export type HostEmit = (port: string, value: JsonObject, timestamp: number, key: Key | undefined) => void;

export interface OperatorHostOptions {
  nodeId: string;
  spec: OperatorSpec;
  /** Params already parsed by spec.params (defaults filled). */
  params: unknown;
  emit: HostEmit;
  /** Ports with a downstream edge (told to the operator); default: every output port of the spec. */
  connectedOutputs?: Iterable<string>;
  /** Number of input channels (upstream nodes): the watermark is the minimum over them. Default 1. */
  inputChannels?: number;
  /** Called when the operator's watermark advances, after timers fired and onWatermark ran. */
  onWatermark?: (watermark: number) => void;
  processingTime?: number;
  maxParallelism?: number;
  /** Restore from a snapshot (see snapshot()) before open(). */
  restoreFrom?: Uint8Array;
  /**
   * This subtask's key groups: on restore only their keys are kept (rescaling), and records keyed
   * here by the spec's keySelector outside them are skipped (another subtask owns them).
   */
  keyGroupRange?: KeyGroupRange;
  backend?: KeyedStateBackend;
  /** Services injected by the runner, passed to spec.create in init (process.custom's sandbox). */
  services?: OperatorServices & Pick<OperatorInit, "maxStateBytesPerKey">;
}

export interface StateStats {
  /** Distinct keys holding state or timers. */
  keys: number;
  stateEntries: number;
  /** Event-time plus processing-time timers. */
  timers: number;
  /** Estimated heap bytes of keyed state (timers not included). */
  stateBytes: number;
}

export interface HostMetrics extends StateStats {
  recordsIn: number;
  recordsOut: number;
  /** Records emitted on the `late` port. */
  late: number;
  watermark: number;
}

interface HostSnapshot {
  format: typeof SNAPSHOT_FORMAT;
  nodeId: string;
  type: string;
  version: number;
  watermark: number;
  channelWatermarks: number[];
  channelIdle: boolean[];
  processingTime: number;
  /** Packed (see PackedTableSnapshot); columnar values or pairs in snapshots written before it; changes only in a changelog checkpoint's. */
  state: Array<TableSnapshot | ColumnarTableSnapshot | PackedTableSnapshot | DeltaTableSnapshot>;
  eventTimers: TimersSnapshot;
  processingTimers: TimersSnapshot;
  operator: JsonValue | null;
  counters: { recordsIn: number; recordsOut: number; late: number };
}

const SNAPSHOT_FORMAT = "keyflow.operator-snapshot/v1";
const DEFAULT_NAMESPACE = "";
/** Up to this many timers, stateStats counts the keys that have only timers at every call; beyond, every TIMER_KEYS_RECOUNT calls. */
const TIMERS_COUNTED_EACH_TIME = 10_000;
const TIMER_KEYS_RECOUNT = 10;

/**
 * The context handed to the operator. One instance per host, mutated as the host moves from
 * record to record, so the per-record path allocates nothing (Flink reuses its contexts too).
 * It is also the operator's TimerService and RuntimeContext.
 */
class HostContext implements BatchContext, TimerService, RuntimeContext, KeyScope, WatermarkContext {
  key: Key | undefined = undefined;
  timestamp = MIN_WATERMARK;
  watermark = MIN_WATERMARK;
  /** The TTL clock (see state/handles.ts): the watermark, or the time of the event-time timer firing. */
  ttlTime = MIN_WATERMARK;
  inputPort = "in";
  processingTime: number;
  readonly timerService: TimerService = this;

  constructor(
    private readonly host: OperatorHost,
    readonly nodeId: string,
    processingTime: number,
  ) {
    this.processingTime = processingTime;
  }

  enter(record: StreamRecord): void {
    this.key = record.key;
    this.timestamp = record.timestamp;
  }

  forKey(key: Key): Collector {
    this.key = key;
    return this;
  }

  adoptState?: <T extends AdoptedTable>(table: T) => T;

  output(value: JsonObject, timestamp?: number): void {
    this.host.emitOut(value, timestamp ?? this.timestamp, this.key);
  }
  sideOutput(port: string, value: JsonObject, timestamp?: number): void {
    this.host.emitSide(port, value, timestamp ?? this.timestamp, this.key);
  }

  currentWatermark(): number {
    return this.watermark;
  }
  currentProcessingTime(): number {
    return this.processingTime;
  }
  registerEventTimeTimer(time: number, namespace = DEFAULT_NAMESPACE): void {
    this.host.eventTimers.register(this.timerKey("registerEventTimeTimer", time), time, namespace);
  }
  deleteEventTimeTimer(time: number, namespace = DEFAULT_NAMESPACE): void {
    this.host.eventTimers.delete(this.timerKey("deleteEventTimeTimer", time), time, namespace);
  }
  registerProcessingTimeTimer(time: number, namespace = DEFAULT_NAMESPACE): void {
    this.host.processingTimers.register(this.timerKey("registerProcessingTimeTimer", time), time, namespace);
  }
  deleteProcessingTimeTimer(time: number, namespace = DEFAULT_NAMESPACE): void {
    this.host.processingTimers.delete(this.timerKey("deleteProcessingTimeTimer", time), time, namespace);
  }
  private timerKey(method: string, time: number): Key {
    if (this.key === undefined) throw new Error(`node "${this.nodeId}": ${method} needs a keyed context; timers are per key (put a keyBy before this operator)`);
    if (typeof time !== "number" || Number.isNaN(time)) throw new Error(`node "${this.nodeId}": ${method}(${String(time)}): a timer time must be a number of ms`);
    return this.key;
  }

  getValueState<T>(d: ValueStateDescriptor<T>): ValueState<T> {
    return this.host.stateHandle(d) as ValueState<T>;
  }
  getListState<T>(d: ListStateDescriptor<T>): ListState<T> {
    return this.host.stateHandle(d) as ListState<T>;
  }
  getMapState<V>(d: MapStateDescriptor<V>): MapState<V> {
    return this.host.stateHandle(d) as MapState<V>;
  }
}

export class OperatorHost {
  readonly nodeId: string;
  readonly spec: OperatorSpec;
  readonly operator: Operator;
  /** Flink's InternalTimerService, one per time domain. */
  readonly eventTimers = new TimerQueue();
  readonly processingTimers = new TimerQueue();

  // ---- configuration
  private readonly emitFn: HostEmit;
  private readonly onWatermarkFn: ((watermark: number) => void) | undefined;
  private readonly keySelector: KeySelector | undefined;
  private readonly implied: ImpliedTimers | undefined;
  private readonly sidePorts: ReadonlySet<string>;
  /** Ports of kind `stream`/`reference`: their records leave without a key (a union's output). */
  private readonly unkeyedPorts: ReadonlySet<string>;
  private readonly outUnkeyed: boolean;
  private readonly maxParallelism: number;
  private readonly keyGroupRange: KeyGroupRange | undefined;

  // ---- state that is not checkpointed
  private readonly ctx: HostContext;
  private readonly expiry = new ExpiryIndex();
  private readonly handles = new Map<string, { descriptor: StateDescriptor; handle: unknown }>();

  // ---- state that is checkpointed
  private readonly backend: KeyedStateBackend;
  private readonly channelWatermarks: number[];
  private readonly channelIdle: boolean[];
  private recordsIn = 0;
  private recordsOut = 0;
  private late = 0;
  /** Keys with timers and no state as last counted, and how many reports ago (see stateStats). */
  private timerOnlyKeys = 0;
  private timerOnlyAge = 0;

  constructor(opts: OperatorHostOptions) {
    const { spec, nodeId } = opts;
    if (!spec.create) throw new Error(`node "${nodeId}": operator type "${spec.type}" has no implementation to run (sources and sinks are run by the runner)`);
    this.nodeId = nodeId;
    this.spec = spec;
    this.emitFn = opts.emit;
    this.onWatermarkFn = opts.onWatermark;
    this.maxParallelism = opts.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    this.keyGroupRange = opts.keyGroupRange;
    this.backend = opts.backend ?? new HeapKeyedStateBackend();
    // `errors` is always open: the engine itself sends records whose key cannot be formed there.
    this.sidePorts = new Set(["errors", ...spec.outputs.filter((o) => o.side || o.id !== "out").map((o) => o.id)]);
    this.unkeyedPorts = new Set(spec.outputs.filter((o) => o.kind === "stream" || o.kind === "reference").map((o) => o.id));
    this.outUnkeyed = this.unkeyedPorts.has("out");
    const channels = Math.max(1, opts.inputChannels ?? 1);
    this.channelWatermarks = new Array<number>(channels).fill(MIN_WATERMARK);
    this.channelIdle = new Array<boolean>(channels).fill(false);
    this.ctx = new HostContext(this, nodeId, opts.processingTime ?? MIN_WATERMARK);
    this.keySelector = spec.keySelector?.(opts.params);
    this.implied = spec.impliedTimers?.(opts.params);
    const backend = this.backend;
    if (backend.adoptTable !== undefined) {
      const adopt = backend.adoptTable.bind(backend);
      this.ctx.adoptState = <T extends AdoptedTable>(table: T): T => {
        adopt(table);
        return table;
      };
    }

    const connected = new Set(opts.connectedOutputs ?? spec.outputs.map((o) => o.id));
    this.operator = spec.create(opts.params, { ...opts.services, nodeId, connectedOutputs: connected });
    if (opts.restoreFrom) this.restore(opts.restoreFrom, opts.keyGroupRange);
    this.operator.open?.(this.ctx);
    if (opts.restoreFrom) {
      if (this.ctx.adoptState !== undefined) this.dropImpliedTimers();
      else this.deriveImpliedTimers();
    }
  }

  get watermark(): number {
    return this.ctx.watermark;
  }
  /** Every input channel is idle (Flink's WatermarkStatus.IDLE): downstream need not wait for this node. */
  get idle(): boolean {
    return this.channelIdle.every(Boolean);
  }
  get processingTime(): number {
    return this.ctx.processingTime;
  }

  // ---- records -----------------------------------------------------------------------------

  /** Processes one record arriving on `inputPort` through input channel `channel`. */
  processElement(record: StreamRecord, inputPort = "in", channel = 0): void {
    this.recordsIn++;
    const ctx = this.ctx;
    let rec = record;
    if (this.keySelector !== undefined && inputPort === "in") {
      let key: Key;
      try {
        key = this.keySelector(record.value);
      } catch (e) {
        ctx.key = record.key;
        ctx.timestamp = record.timestamp;
        this.emitSide("errors", errorOutput(record.value, `node "${this.nodeId}": ${(e as Error).message}`), record.timestamp, record.key);
        return;
      }
      if (this.keyGroupRange !== undefined && !keyGroupRangeContains(this.keyGroupRange, keyGroupOf(key, this.maxParallelism))) return;
      rec = { value: record.value, timestamp: record.timestamp, key };
    } else if (rec.key === undefined && this.spec.requiresKeyedInput && inputPort === "in") {
      throw new Error(`node "${this.nodeId}" (${this.spec.type}) needs a keyed input but received a record without a key on channel ${channel}; put a keyBy before it`);
    }
    ctx.key = rec.key;
    ctx.timestamp = rec.timestamp;
    ctx.inputPort = inputPort;
    this.operator.processElement(rec, ctx);
  }

  /** Whether processBatch hands keyed records to the operator in one call (else it loops over processElement). */
  get takesBatches(): boolean {
    return this.operator.processBatch !== undefined;
  }

  /** Whether the node keys its input itself (its spec's keySelector, as dedup's id): its records need no key. */
  get selectsKeys(): boolean {
    return this.keySelector !== undefined;
  }

  /**
   * Records arriving on `in` through channel 0 one after another, with no watermark between
   * them: the same as processElement on each in order, but an operator with processBatch takes
   * them in one call (see Operator.processBatch): all of them when they are keyed, or, for a node
   * that keys its input itself, the runs between records whose key cannot be selected.
   */
  processBatch(records: readonly StreamRecord[], from = 0, to = records.length): void {
    const op = this.operator;
    if (op.processBatch !== undefined && this.keySelector !== undefined) {
      this.selectKeysThenBatch(this.keySelector, records, from, to);
      return;
    }
    let keyed = op.processBatch !== undefined;
    for (let i = from; keyed && i < to; i++) keyed = (records[i] as StreamRecord).key !== undefined;
    if (!keyed) {
      for (let i = from; i < to; i++) this.processElement(records[i] as StreamRecord);
      return;
    }
    this.recordsIn += to - from;
    this.ctx.inputPort = "in";
    op.processBatch?.(records, from, to, this.ctx);
  }

  /** Keyed copies of the records of a run (selectKeysThenBatch), reused from one run to the next. */
  private readonly keyedRun: StreamRecord[] = [];

  /**
   * processBatch for a node that keys its input itself: each record keyed as processElement keys it,
   * handed over in runs. A record whose key cannot be selected ends the run before it and then goes
   * through processElement (which selects again, fails the same way and sends it to `errors`), so
   * that outputs keep the order of record-by-record processing; one whose key group another subtask
   * owns is skipped, as there.
   */
  private selectKeysThenBatch(select: KeySelector, records: readonly StreamRecord[], from: number, to: number): void {
    const range = this.keyGroupRange;
    for (let i = from; i < to; i++) {
      const r = records[i] as StreamRecord;
      let key: Key;
      try {
        key = select(r.value);
      } catch {
        this.deliverKeyedRun();
        this.processElement(r);
        continue;
      }
      if (range !== undefined && !keyGroupRangeContains(range, keyGroupOf(key, this.maxParallelism))) {
        this.recordsIn++;
        continue;
      }
      this.keyedRun.push({ value: r.value, timestamp: r.timestamp, key });
    }
    this.deliverKeyedRun();
  }

  /** Hands the run selectKeysThenBatch collected to the operator, and empties it. */
  private deliverKeyedRun(): void {
    const run = this.keyedRun;
    if (run.length === 0) return;
    this.recordsIn += run.length;
    this.ctx.inputPort = "in";
    try {
      this.operator.processBatch?.(run, 0, run.length, this.ctx);
    } finally {
      run.length = 0;
    }
  }

  // ---- watermarks and time -------------------------------------------------------------------

  /**
   * A watermark from input channel `channel`. The operator's watermark is the minimum over its
   * non-idle channels; when it advances, due event-time timers fire in order, then onWatermark,
   * then active TTL cleanup, then the watermark is forwarded. Returns whether it advanced.
   */
  processWatermark(watermark: number, channel = 0): boolean {
    const wms = this.channelWatermarks;
    if (channel < 0 || channel >= wms.length) throw new RangeError(`node "${this.nodeId}": no input channel ${channel}`);
    this.channelIdle[channel] = false;
    if (watermark <= (wms[channel] as number)) return false;
    wms[channel] = watermark;
    return this.recomputeWatermark();
  }

  /** An idle channel no longer holds the operator's watermark back; it becomes active again with its next watermark. */
  markChannelIdle(channel: number, idle = true): boolean {
    this.channelIdle[channel] = idle;
    return this.recomputeWatermark();
  }

  /** All inputs ended: the watermark becomes +infinity, so every timer fires. */
  endOfInput(): void {
    for (let i = 0; i < this.channelWatermarks.length; i++) {
      this.channelWatermarks[i] = MAX_WATERMARK;
      this.channelIdle[i] = false;
    }
    this.recomputeWatermark();
  }

  private recomputeWatermark(): boolean {
    let min = MAX_WATERMARK;
    let active = 0;
    const wms = this.channelWatermarks;
    for (let i = 0; i < wms.length; i++) {
      if (this.channelIdle[i]) continue;
      active++;
      const w = wms[i] as number;
      if (w < min) min = w;
    }
    if (active === 0 || min <= this.ctx.watermark) return false;
    this.advanceWatermark(min);
    return true;
  }

  private advanceWatermark(watermark: number): void {
    const ctx = this.ctx;
    // As Flink's timer service: the new watermark is current while its timers fire.
    ctx.watermark = watermark;
    this.fireTimers(this.eventTimers, watermark, "event");
    ctx.ttlTime = watermark;
    ctx.key = undefined;
    ctx.timestamp = watermark;
    ctx.inputPort = "in";
    this.operator.onWatermark?.(watermark, ctx);
    this.expiry.cleanup(watermark);
    this.onWatermarkFn?.(watermark);
  }

  /** Advances the injected processing-time clock and fires the processing-time timers it passes. */
  setProcessingTime(now: number): void {
    if (now <= this.ctx.processingTime) return;
    this.ctx.processingTime = now;
    this.fireTimers(this.processingTimers, now, "processing");
    this.ctx.key = undefined;
  }

  private fireTimers(queue: TimerQueue, upTo: number, domain: "event" | "processing"): void {
    const op = this.operator;
    if (op.onTimer === undefined) {
      queue.fireUpTo(upTo, () => {});
      return;
    }
    const ctx = this.ctx;
    const eventTime = domain === "event";
    // An operator that fires a time's timers in one pass takes each event-time bucket whole.
    const onEventTimers = eventTime ? (op as Partial<FiresTimerBatches>).onEventTimers : undefined;
    const fireBatch = onEventTimers === undefined ? undefined : (batch: TimerBatch) => onEventTimers.call(op, this.enteringContext(batch), ctx);
    queue.fireUpTo(upTo, (key, namespace, time) => {
      ctx.key = key;
      ctx.timestamp = time;
      if (eventTime) ctx.ttlTime = time;
      ctx.inputPort = "in";
      op.onTimer?.({ key, time, domain, namespace }, ctx);
    }, fireBatch);
  }

  /** The batch, with entering a timer also moving the context to it (as fireTimers does per key). */
  private enteringContext(batch: TimerBatch): TimerBatch {
    const ctx = this.ctx;
    const { keys, time } = batch;
    return {
      time,
      namespace: batch.namespace,
      keys,
      enter: (i: number): boolean => {
        if (!batch.enter(i)) return false;
        ctx.key = keys[i];
        ctx.timestamp = time;
        ctx.ttlTime = time;
        ctx.inputPort = "in";
        return true;
      },
    };
  }

  // ---- output ------------------------------------------------------------------------------

  /** @internal Main output, from the context (whether `out` is keyed is known once: a Set lookup per alert showed). */
  emitOut(value: JsonObject, timestamp: number, key: Key | undefined): void {
    this.recordsOut++;
    this.emitFn("out", value, timestamp, this.outUnkeyed ? undefined : key);
  }

  /** @internal Side output, from the context. */
  emitSide(port: string, value: JsonObject, timestamp: number, key: Key | undefined): void {
    if (!this.sidePorts.has(port)) {
      throw new Error(`node "${this.nodeId}" (${this.spec.type}) emitted on side output "${port}", which its spec does not declare (declared: ${[...this.sidePorts].join(", ") || "none"})`);
    }
    if (port === "late") this.late++;
    this.recordsOut++;
    this.emitFn(port, value, timestamp, this.unkeyedPorts.has(port) ? undefined : key);
  }

  // ---- state -------------------------------------------------------------------------------

  /** @internal One handle per state name, created in open(). */
  stateHandle(d: StateDescriptor): unknown {
    const existing = this.handles.get(d.name);
    if (existing) {
      if (existing.descriptor.kind !== d.kind || !sameTtl(existing.descriptor.ttl, d.ttl)) {
        throw new Error(`node "${this.nodeId}": state "${d.name}" is declared twice with different kinds or TTLs`);
      }
      return existing.handle;
    }
    const kind: StateKind = d.kind;
    const table = this.backend.table<never>(d.name, kind) as StateTable<never>;
    const ctx = this.ctx;
    let handle: unknown;
    if (d.ttl === undefined) {
      handle = kind === "value" ? new PlainValueState(table, ctx) : kind === "list" ? new PlainListState(table, ctx) : new PlainMapState(table, ctx);
    } else {
      handle =
        kind === "value"
          ? new TtlValueState(table, ctx, d.ttl, this.expiry)
          : kind === "list"
            ? new TtlListState(table, ctx, d.ttl, this.expiry)
            : new TtlMapState(table, ctx, d.ttl, this.expiry);
    }
    this.handles.set(d.name, { descriptor: d, handle });
    return handle;
  }

  /**
   * Keys count those with timers and no state too. Counting them takes a set of every timer's key
   * (7 % of a W1 keyed subtask's work at one report a second over 50 k keys), so past
   * TIMERS_COUNTED_EACH_TIME timers they are recounted every TIMER_KEYS_RECOUNT calls and the count
   * in between is the last one: such keys are few or none for the catalog's operators, whose timers
   * clean up state they keep.
   */
  stateStats(): StateStats {
    const s = this.backend.stats();
    let timers = this.eventTimers.size + this.processingTimers.size;
    const queued = timers;
    for (const t of this.backend.tables()) timers += (t as AdoptedTable).impliedTimerCount?.() ?? 0;
    // Implied timers belong to keys with state: only queued ones can make timer-only keys.
    if (queued === 0) this.timerOnlyKeys = 0;
    else if (queued <= TIMERS_COUNTED_EACH_TIME || this.timerOnlyAge++ % TIMER_KEYS_RECOUNT === 0) {
      const timerKeys = this.eventTimers.keys();
      for (const k of this.processingTimers.keys()) timerKeys.add(k);
      // A lookup per timer key, not a set of every state key.
      const tables = this.backend.tables().filter((t) => t.size > 0);
      let n = 0;
      for (const k of timerKeys) if (!tables.some((t) => t.has(k))) n++;
      this.timerOnlyKeys = n;
    }
    return { keys: s.keys + this.timerOnlyKeys, stateEntries: s.stateEntries, timers, stateBytes: s.stateBytes };
  }

  metrics(): HostMetrics {
    return { recordsIn: this.recordsIn, recordsOut: this.recordsOut, late: this.late, watermark: this.ctx.watermark, ...this.stateStats() };
  }

  // ---- snapshot / restore --------------------------------------------------------------------

  /** Packs the keyed state changed since the last snapshot now (or a budget's worth), ahead of the next (see KeyedStateBackend.materialize). */
  materialize(budget?: MaterializeBudget): boolean {
    return this.backend.materialize?.(this.maxParallelism, budget) ?? true;
  }

  /** Everything needed to continue exactly: keyed state, timers, watermarks, operator state, counters. */
  snapshot(): Uint8Array {
    return joinPieces(this.snapshotPieces());
  }

  /**
   * snapshot()'s bytes in pieces: the packed key-group columns and timer ranges are the kept arrays
   * themselves (see encodeSnapshotPieces), not written over until `hold` is released (see SnapshotHold).
   */
  snapshotPieces(hold?: SnapshotHold, changelog?: ChangelogSnapshot): SnapshotPieces {
    return encodeSnapshotPieces((ref) => this.snapshotValue(ref, hold, changelog));
  }

  private snapshotValue(ref: PieceRef, hold: SnapshotHold | undefined, changelog: ChangelogSnapshot | undefined): HostSnapshot {
    const state =
      (changelog !== undefined ? this.backend.snapshotChangelog?.(this.maxParallelism, hold, changelog === "changes") : undefined) ??
      this.backend.snapshotColumns?.(this.maxParallelism, hold) ??
      columnsOf(this.backend.snapshot(this.maxParallelism), this.maxParallelism);
    return {
      format: SNAPSHOT_FORMAT,
      nodeId: this.nodeId,
      type: this.spec.type,
      version: this.spec.version,
      watermark: this.ctx.watermark,
      channelWatermarks: [...this.channelWatermarks],
      channelIdle: [...this.channelIdle],
      processingTime: this.ctx.processingTime,
      // Same fields in the same order as the tables give them: the encoding writes an object's keys as they come.
      state: state.map((t) => {
        if ("changes" in t) {
          const { changedKeys, ops, changed } = t.changes;
          return { name: t.name, kind: t.kind, changedKeys: ref(packValues(changedKeys)), ops: ref(ops), changed: ref(changed) };
        }
        return "packed" in t ? { name: t.name, kind: t.kind, packedKeys: t.packedKeys?.map(ref) ?? null, packed: t.packed.map(ref) } : t;
      }),
      // An adopted table's implied timers are not in the queue: see OperatorSpec.impliedTimers.
      eventTimers: { packed: this.eventTimers.snapshotPacked().packed.map(ref) },
      processingTimers: { packed: this.processingTimers.snapshotPacked().packed.map(ref) },
      operator: this.operator.snapshotState?.() ?? null,
      counters: { recordsIn: this.recordsIn, recordsOut: this.recordsOut, late: this.late },
    };
  }

  /** The timers this operator's heap storage leaves implied in its state (see OperatorSpec.impliedTimers). */
  get impliedTimers(): ImpliedTimers | undefined {
    return this.implied;
  }

  /**
   * Restored where the handle storage runs: registers the timers a heap snapshot left implied in the
   * state (a snapshot that listed them, or one of this storage, only gets each timer once more:
   * registering a (key, namespace, time) twice keeps one).
   */
  private deriveImpliedTimers(): void {
    const implied = this.implied;
    if (implied === undefined) return;
    const table = this.backend.tables().find((t) => t.name === implied.state);
    if (table === undefined) return;
    for (const [key, stored] of table.entries()) for (const [time, namespace] of implied.of(key, stored)) this.eventTimers.register(key, time, namespace);
  }

  /** Restored timers of the namespaces the heap storage schedules itself (see OperatorSpec.impliedTimers). */
  private dropImpliedTimers(): void {
    if (this.implied === undefined) return;
    const namespaces = new Set(this.implied.namespaces);
    this.eventTimers.restore(this.eventTimers.snapshot().filter(([, ns]) => !namespaces.has(ns)));
  }

  private restore(bytes: Uint8Array, range: KeyGroupRange | undefined): void {
    const snap = decodeSnapshot(bytes) as HostSnapshot;
    if (snap === null || typeof snap !== "object" || snap.format !== SNAPSHOT_FORMAT) {
      throw new Error(`node "${this.nodeId}": the snapshot is not an operator snapshot (${SNAPSHOT_FORMAT})`);
    }
    if (snap.type !== this.spec.type) {
      throw new Error(`node "${this.nodeId}": the snapshot was taken from a "${snap.type}" operator, not "${this.spec.type}"; node ids name state, so a node cannot change type and keep its state`);
    }
    const maxP = this.maxParallelism;
    const keep = range ? (k: Key) => keyGroupRangeContains(range, keyGroupOf(k, maxP)) : undefined;
    this.backend.restore(tablesFromSnapshot(snap.state), keep);
    this.eventTimers.restore(timersFromSnapshot(snap.eventTimers), keep);
    this.processingTimers.restore(timersFromSnapshot(snap.processingTimers), keep);
    if (snap.channelWatermarks.length === this.channelWatermarks.length) {
      snap.channelWatermarks.forEach((w, i) => (this.channelWatermarks[i] = w));
      snap.channelIdle.forEach((b, i) => (this.channelIdle[i] = b));
    } else {
      // The graph changed around this node: start its channels at the restored watermark.
      this.channelWatermarks.fill(snap.watermark);
    }
    this.ctx.watermark = snap.watermark;
    this.ctx.ttlTime = snap.watermark;
    this.ctx.processingTime = Math.max(this.ctx.processingTime, snap.processingTime);
    this.recordsIn = snap.counters.recordsIn;
    this.recordsOut = snap.counters.recordsOut;
    this.late = snap.counters.late;
    if (snap.operator !== null) this.operator.restoreState?.(snap.operator);
  }

  /** Calls the operator's close hook. */
  close(): void {
    this.operator.close?.();
  }
}

function sameTtl(a: StateTtlConfig | undefined, b: StateTtlConfig | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.ttlMs === b.ttlMs && (a.updateType ?? "onCreateAndWrite") === (b.updateType ?? "onCreateAndWrite");
}
