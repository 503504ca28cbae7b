// The operator contract: what an operator implementation sees of the engine.
// Modelled on Flink's KeyedProcessFunction / AbstractStreamOperator: output only through the
// context's collector, timers only through the timer service, state only through named
// descriptors. Time comes from records and watermarks; processing time is injected.
import type { AdoptedTable } from "./state/backend";

/** A JSON value, as records carry them. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [field: string]: JsonValue };
export type JsonObject = { [field: string]: JsonValue };

/** The key of a keyed stream in its canonical form (see ./keys canonicalKey). */
export type Key = string;

/** A record inside the engine. `timestamp` is its event time in ms since the epoch. */
export interface StreamRecord {
  value: JsonObject;
  timestamp: number;
  /** Set by keyBy (and by operators that key by themselves, such as dedup). */
  key?: Key;
}

/** Watermark meaning "no more records will ever come": fires every window and timer. */
export const MAX_WATERMARK = Number.POSITIVE_INFINITY;
/** Watermark before any record has been seen. */
export const MIN_WATERMARK = Number.NEGATIVE_INFINITY;

export type TimeDomain = "event" | "processing";

/** A timer firing, delivered to onTimer with its key's state in scope. */
export interface TimerFiring {
  key: Key;
  time: number;
  domain: TimeDomain;
  /** Lets one operator keep several kinds of timers apart (e.g. a window's end, a cleanup). */
  namespace: string;
}

// ---- State descriptors ---------------------------------------------------------------------

export interface StateTtlConfig {
  ttlMs: number;
  /** When the TTL clock restarts. Flink's OnCreateAndWrite (default) or OnReadAndWrite. */
  updateType?: "onCreateAndWrite" | "onReadAndWrite";
}

interface StateDescriptorBase {
  /** Unique within the operator; part of the checkpoint format, so never rename a shipped one. */
  name: string;
  ttl?: StateTtlConfig;
}
export interface ValueStateDescriptor<T> extends StateDescriptorBase { kind: "value"; _type?: T }
export interface ListStateDescriptor<T> extends StateDescriptorBase { kind: "list"; _type?: T }
export interface MapStateDescriptor<V> extends StateDescriptorBase { kind: "map"; _type?: V }
export type StateDescriptor = ValueStateDescriptor<unknown> | ListStateDescriptor<unknown> | MapStateDescriptor<unknown>;

export const valueState = <T>(name: string, ttl?: StateTtlConfig): ValueStateDescriptor<T> => ({ kind: "value", name, ...(ttl ? { ttl } : {}) });
export const listState = <T>(name: string, ttl?: StateTtlConfig): ListStateDescriptor<T> => ({ kind: "list", name, ...(ttl ? { ttl } : {}) });
export const mapState = <V>(name: string, ttl?: StateTtlConfig): MapStateDescriptor<V> => ({ kind: "map", name, ...(ttl ? { ttl } : {}) });

/** State handles are scoped to the key of the record or timer being processed. Values must be JSON-serializable. */
export interface ValueState<T> {
  value(): T | undefined;
  update(value: T): void;
  clear(): void;
}
export interface ListState<T> {
  get(): readonly T[];
  add(value: T): void;
  update(values: readonly T[]): void;
  clear(): void;
}
export interface MapState<V> {
  get(mapKey: string): V | undefined;
  put(mapKey: string, value: V): void;
  remove(mapKey: string): void;
  contains(mapKey: string): boolean;
  entries(): IterableIterator<[string, V]>;
  keys(): IterableIterator<string>;
  isEmpty(): boolean;
  clear(): void;
}

// ---- Contexts ------------------------------------------------------------------------------

export interface TimerService {
  currentWatermark(): number;
  /** The injected processing-time clock; never Date.now(). */
  currentProcessingTime(): number;
  /** Registering the same (key, time, namespace) twice yields one timer. */
  registerEventTimeTimer(time: number, namespace?: string): void;
  deleteEventTimeTimer(time: number, namespace?: string): void;
  registerProcessingTimeTimer(time: number, namespace?: string): void;
  deleteProcessingTimeTimer(time: number, namespace?: string): void;
}

/** Given to open(): where an operator declares its state. */
export interface RuntimeContext {
  nodeId: string;
  /** The operator's event-time watermark (at open: a restored snapshot's), for state derived from it. */
  currentWatermark(): number;
  getValueState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  getMapState<V>(descriptor: MapStateDescriptor<V>): MapState<V>;
  /**
   * Present only on a backend that keeps tables by reference (the heap backend): registers a table
   * kept in the operator's own layout under its name (the backend first hands it, through load(),
   * the entries restored for that name) and returns it. The backend snapshots, rescales and counts
   * it like its own tables. Operators use it for a faster storage of the same logic and keep to
   * the state handles above when it is absent.
   */
  adoptState?<T extends AdoptedTable>(table: T): T;
}

/** What onWatermark may emit: output as if from a timer of a given key (the key travels with the record). */
export interface WatermarkContext extends Collector {
  /** The collector, with `key` as the key of what it emits next. */
  forKey(key: Key): Collector;
}

export interface Collector {
  /** Emits on the main output. The timestamp defaults to that of the record (or timer) being processed. */
  output(value: JsonObject, timestamp?: number): void;
  /** Emits on a named side output port declared in the operator's spec (`late`, `errors`, `expired`, ...). */
  sideOutput(port: string, value: JsonObject, timestamp?: number): void;
}

/**
 * What the `errors` side output carries: why, and the record unchanged so that it can be
 * replayed. The engine turns an `errors` record on an unconnected port into a dead letter whose
 * reason is `error`.
 */
export interface ErrorOutput extends JsonObject {
  error: string;
  record: JsonObject;
}
export const errorOutput = (record: JsonObject, message: string): ErrorOutput => ({ error: message, record });

export interface ProcessContext extends Collector {
  /** The current key; undefined only for operators on unkeyed streams. */
  readonly key: Key | undefined;
  /** Event time of the record or timer being processed. */
  readonly timestamp: number;
  readonly timerService: TimerService;
  /** The input port the record came on (`in`, `reference`, ...). */
  readonly inputPort: string;
}

/** processBatch's context: the ProcessContext, moved to each record in turn by enter(). */
export interface BatchContext extends ProcessContext {
  /** Makes `record` the one being processed: its key and timestamp are then the context's. */
  enter(record: StreamRecord): void;
}

// ---- The operator lifecycle ------------------------------------------------------------------

/**
 * One operator instance (one subtask of one node). Only processElement is required; the engine
 * fires timers from watermarks and the injected clock, forwards watermarks downstream, and
 * snapshots keyed state and timers itself. Operator-local, non-keyed state (rare: a broadcast
 * reference table, a source's offsets) goes through snapshotState/restoreState.
 */
export interface Operator {
  open?(ctx: RuntimeContext): void;
  processElement(record: StreamRecord, ctx: ProcessContext): void;
  /**
   * Optional: records[from, to), all keyed, arriving on `in` with no watermark between them
   * (OperatorHost.processBatch). Must do exactly what processElement would do on each in turn
   * (entering each with ctx.enter first); it lets an operator look all their keys up before
   * updating any, so that the lookups' cache misses overlap instead of queueing one by one.
   */
  processBatch?(records: readonly StreamRecord[], from: number, to: number, ctx: BatchContext): void;
  onTimer?(timer: TimerFiring, ctx: ProcessContext): void;
  /** Called after the timers up to `watermark` have fired, before it is forwarded. */
  onWatermark?(watermark: number, ctx: WatermarkContext): void;
  snapshotState?(): JsonValue;
  restoreState?(state: JsonValue): void;
  close?(): void;
}
