// process.custom: a keyed process function written by the user, with the same context as the
// built-in operators (key, timestamp, watermark, state handles, timers, output, side output).
// The engine defines the contract — the types below, and the same text as a .d.ts for the
// editor — and runs a function it is given; turning the user's TypeScript into that function, in
// a sandbox, is the runner's job (it injects a CustomFunctionFactory), never the pure core's.
import { z } from "zod";
import {
  listState,
  mapState,
  valueState,
  type JsonObject,
  type JsonValue,
  type ListState,
  type MapState,
  type Operator,
  type ProcessContext,
  type RuntimeContext,
  type StateTtlConfig,
  type ValueState,
  type Key,
} from "../../core/api";
import { KeyStateBudget } from "../../core/state/budget";
import { DEFAULT_MAX_STATE_BYTES_PER_KEY, MAX_CODE_LENGTH } from "../../limits";
import { defineOperator, type OperatorInit } from "../../core/spec";
import { errorRecord, errorsPort } from "../side-outputs";

// ---- The contract seen by user code ---------------------------------------------------------

/** A record as user code sees it. */
export interface CustomRecord {
  readonly value: JsonObject;
  /** Event time, ms since the epoch. */
  readonly timestamp: number;
  readonly key: string | undefined;
}

export interface CustomStateOptions {
  /** State TTL in ms of event time (refreshed on write). */
  ttlMs?: number;
}

/** State handles by name, scoped to the current key; a name keeps its kind (and TTL) for its life. */
export interface CustomState {
  value<T extends JsonValue>(name: string, opts?: CustomStateOptions): ValueState<T>;
  list<T extends JsonValue>(name: string, opts?: CustomStateOptions): ListState<T>;
  map<V extends JsonValue>(name: string, opts?: CustomStateOptions): MapState<V>;
}

/** Timers of the current key; `tag` tells several kinds apart (default ""). Registering twice yields one timer. */
export interface CustomTimers {
  registerEventTime(time: number, tag?: string): void;
  deleteEventTime(time: number, tag?: string): void;
  registerProcessingTime(time: number, tag?: string): void;
  deleteProcessingTime(time: number, tag?: string): void;
}

/** The side outputs user code may emit on. */
export type CustomSidePort = "alerts" | "errors";

export interface CustomContext {
  readonly key: string | undefined;
  /** Event time of the record or timer being processed. */
  readonly timestamp: number;
  readonly inputPort: string;
  watermark(): number;
  /** The injected processing-time clock (never the wall clock). */
  processingTime(): number;
  readonly state: CustomState;
  readonly timers: CustomTimers;
  output(value: JsonObject, timestamp?: number): void;
  sideOutput(port: CustomSidePort, value: JsonObject, timestamp?: number): void;
}

export interface CustomTimer {
  readonly time: number;
  readonly domain: "event" | "processing";
  readonly tag: string;
}

/** What the user's module exports, once the runner has compiled and sandboxed it. */
export interface CustomProcessFunction {
  processElement(record: CustomRecord, ctx: CustomContext): void;
  onTimer?(timer: CustomTimer, ctx: CustomContext): void;
}

/** Supplied by the runner: turns the user's code into a function, in its sandbox. Throws on compile errors. */
export type CustomFunctionFactory = (code: string, site: { nodeId: string }) => CustomProcessFunction;

/** The contract above as declarations for the editor (Monaco's addExtraLib). Keep in step with the types. */
export const processCustomTypeDefinitions = `// Keyflow process.custom: the context of a keyed process function.
type JsonValue = null | boolean | number | string | JsonValue[] | { [field: string]: JsonValue };
type JsonObject = { [field: string]: JsonValue };

interface ValueState<T> { value(): T | undefined; update(value: T): void; clear(): void }
interface ListState<T> { get(): readonly T[]; add(value: T): void; update(values: readonly T[]): void; clear(): void }
interface MapState<V> {
  get(mapKey: string): V | undefined; put(mapKey: string, value: V): void; remove(mapKey: string): void;
  contains(mapKey: string): boolean; entries(): IterableIterator<[string, V]>; keys(): IterableIterator<string>;
  isEmpty(): boolean; clear(): void;
}

/** A record: its JSON value, event time (ms since the epoch) and key. */
interface InputRecord { readonly value: JsonObject; readonly timestamp: number; readonly key: string | undefined }

interface StateOptions { /** State TTL in ms of event time (refreshed on write). */ ttlMs?: number }
/** State handles by name, scoped to the current key. A name keeps its kind (and TTL) for its life. */
interface State {
  value<T extends JsonValue>(name: string, opts?: StateOptions): ValueState<T>;
  list<T extends JsonValue>(name: string, opts?: StateOptions): ListState<T>;
  map<V extends JsonValue>(name: string, opts?: StateOptions): MapState<V>;
}
/** Timers of the current key; tag tells kinds apart (default ""). Registering twice yields one timer. */
interface Timers {
  registerEventTime(time: number, tag?: string): void;
  deleteEventTime(time: number, tag?: string): void;
  registerProcessingTime(time: number, tag?: string): void;
  deleteProcessingTime(time: number, tag?: string): void;
}
interface Context {
  readonly key: string | undefined;
  /** Event time of the record or timer being processed. */
  readonly timestamp: number;
  readonly inputPort: string;
  watermark(): number;
  /** The engine's processing-time clock (there is no Date.now() here). */
  processingTime(): number;
  readonly state: State;
  readonly timers: Timers;
  output(value: JsonObject, timestamp?: number): void;
  sideOutput(port: "alerts" | "errors", value: JsonObject, timestamp?: number): void;
}
interface Timer { readonly time: number; readonly domain: "event" | "processing"; readonly tag: string }
`;

/** The code a new process.custom node starts with. */
export const processCustomTemplate = `// Called for every record of a key (ctx.key); state and timers are that key's.
export function processElement(record: InputRecord, ctx: Context): void {
  const count = ctx.state.value<number>("count");
  const n = (count.value() ?? 0) + 1;
  count.update(n);
  // Forget the key one hour of event time after its first record.
  if (n === 1) ctx.timers.registerEventTime(record.timestamp + 3_600_000, "reset");
  if (n === 10) ctx.sideOutput("alerts", { key: ctx.key ?? null, ts: record.timestamp, count: n });
  ctx.output(record.value);
}

// Called when a timer registered by this key fires.
export function onTimer(timer: Timer, ctx: Context): void {
  if (timer.tag === "reset") ctx.state.value<number>("count").clear();
}
`;

// ---- The operator ---------------------------------------------------------------------------

export const processCustomParams = z.strictObject({
  code: z
    .string()
    .min(1, { error: "must be TypeScript code exporting processElement(record, ctx)" })
    .max(MAX_CODE_LENGTH, { error: (issue) => `is ${String((issue.input as string).length)} characters long, over the limit of ${MAX_CODE_LENGTH} for code` })
    .default(processCustomTemplate)
    .describe("TypeScript module exporting `processElement(record, ctx)` and optionally `onTimer(timer, ctx)`; see the Context type in the editor"),
});
export type ProcessCustomParams = z.infer<typeof processCustomParams>;

/** Namespace prefix of user timers, so their tags cannot collide with engine namespaces. */
const TIMER_PREFIX = "custom:";

export const NO_SANDBOX_MESSAGE =
  "process.custom needs the runner's sandbox: user code is compiled and run by the runner, which passes a CustomFunctionFactory to create()";

export const processCustomSpec = defineOperator({
  type: "process.custom",
  version: 1,
  category: "custom",
  title: "Custom process function",
  summary: "A keyed process function in TypeScript, with state, timers and side outputs",
  docs: `Write the logic no built-in expresses, as Flink's \`KeyedProcessFunction\`: export
\`processElement(record, ctx)\` and, optionally, \`onTimer(timer, ctx)\`. The context is the one the built-in operators
get: \`ctx.key\`, \`ctx.timestamp\` (event time), \`ctx.watermark()\`, \`ctx.processingTime()\`, state handles by name
(\`ctx.state.value<number>("count", { ttlMs })\`, \`.list\`, \`.map\`), timers with a tag
(\`ctx.timers.registerEventTime(t, "reset")\`), \`ctx.output(value)\` and \`ctx.sideOutput("alerts" | "errors", value)\`.

**Determinism.** The code runs in the runner's sandbox without the clock, randomness or I/O, so a replay gives the same
output: use event time and timers, not \`Date.now()\`. State must be JSON.

**Errors.** An exception thrown by the code on a record or timer sends \`{ error, record }\` to \`errors\` and the
job goes on; the state writes made before the throw stay.

**State.** Whatever the code keeps, per key: give state a TTL or clear it from a timer, or it grows with the keys.`,
  params: processCustomParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "output", kind: "keyed", description: "What the code emits with ctx.output" },
    { id: "alerts", label: "alerts", kind: "keyed", side: true, description: "What the code emits with ctx.sideOutput(\"alerts\", ...)" },
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  create(params, init): Operator {
    // The runner injects its sandbox's factory (LocalJobOptions.operatorServices); the engine has none.
    const factory = init.customFunctionFactory;
    if (typeof factory !== "function") throw new Error(`node "${init.nodeId}": ${NO_SANDBOX_MESSAGE}`);
    return createCustomOperator(params, init, (code, site) => {
      const fn: unknown = factory(code, site);
      if (!isCustomProcessFunction(fn)) throw new Error(`node "${init.nodeId}": the code must export processElement(record, ctx)`);
      return fn;
    });
  },
});

function isCustomProcessFunction(value: unknown): value is CustomProcessFunction {
  if (typeof value !== "object" || value === null || !("processElement" in value) || typeof value.processElement !== "function") return false;
  return !("onTimer" in value) || value.onTimer === undefined || typeof value.onTimer === "function";
}

/** Runs the user's function as an Operator; the runner calls this with its sandbox's factory. */
export function createCustomOperator(params: ProcessCustomParams, init: Pick<OperatorInit, "nodeId" | "maxStateBytesPerKey">, factory: CustomFunctionFactory): Operator {
  const fn = factory(params.code, { nodeId: init.nodeId });
  let runtime: RuntimeContext | undefined;
  let current: ProcessContext | undefined;

  const needContext = (): ProcessContext => {
    if (current === undefined) throw new Error(`node "${init.nodeId}": the context is only valid during processElement and onTimer`);
    return current;
  };
  const needRuntime = (): RuntimeContext => {
    if (runtime === undefined) throw new Error(`node "${init.nodeId}": state is only available once the operator is open`);
    return runtime;
  };
  const ttlOf = (opts?: CustomStateOptions): StateTtlConfig | undefined => (opts?.ttlMs === undefined ? undefined : { ttlMs: opts.ttlMs });
  // Handles are created on first use and are key-scoped by the engine, so one per name suffices.
  // Every write is accounted per key: the code decides what it keeps, settings.maxStateBytesPerKey bounds it.
  const budget = new KeyStateBudget(init.nodeId, init.maxStateBytesPerKey ?? DEFAULT_MAX_STATE_BYTES_PER_KEY, () => needContext().key as Key);
  const state: CustomState = {
    value: <T extends JsonValue>(name: string, opts?: CustomStateOptions) => budget.value(name, needRuntime().getValueState(valueState<T>(`custom.${name}`, ttlOf(opts)))),
    list: <T extends JsonValue>(name: string, opts?: CustomStateOptions) => budget.list(name, needRuntime().getListState(listState<T>(`custom.${name}`, ttlOf(opts)))),
    map: <V extends JsonValue>(name: string, opts?: CustomStateOptions) => budget.map(name, needRuntime().getMapState(mapState<V>(`custom.${name}`, ttlOf(opts)))),
  };
  const timers: CustomTimers = {
    registerEventTime: (time, tag = "") => needContext().timerService.registerEventTimeTimer(time, TIMER_PREFIX + tag),
    deleteEventTime: (time, tag = "") => needContext().timerService.deleteEventTimeTimer(time, TIMER_PREFIX + tag),
    registerProcessingTime: (time, tag = "") => needContext().timerService.registerProcessingTimeTimer(time, TIMER_PREFIX + tag),
    deleteProcessingTime: (time, tag = "") => needContext().timerService.deleteProcessingTimeTimer(time, TIMER_PREFIX + tag),
  };
  const context: CustomContext = {
    get key() {
      return needContext().key;
    },
    get timestamp() {
      return needContext().timestamp;
    },
    get inputPort() {
      return needContext().inputPort;
    },
    watermark: () => needContext().timerService.currentWatermark(),
    processingTime: () => needContext().timerService.currentProcessingTime(),
    state,
    timers,
    output: (value, timestamp) => needContext().output(value, timestamp),
    sideOutput: (port, value, timestamp) => {
      if (port !== "alerts" && port !== "errors") throw new Error(`node "${init.nodeId}": no side output "${String(port)}"; use "alerts" or "errors"`);
      needContext().sideOutput(port, value, timestamp);
    },
  };

  /** Runs user code; an exception becomes an `errors` record instead of failing the job. */
  const guarded = (ctx: ProcessContext, record: JsonObject, what: string, body: () => void): void => {
    current = ctx;
    try {
      body();
    } catch (e) {
      // Over the per-key state limit: the job fails, even if the code caught the throw.
      if (budget.exceeded) throw budget.exceeded;
      const message = e instanceof Error ? e.message : String(e);
      ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${what} threw: ${message}`, record));
    } finally {
      current = undefined;
    }
    if (budget.exceeded) throw budget.exceeded;
  };

  return {
    open(ctx) {
      runtime = ctx;
    },
    processElement(record, ctx) {
      const r: CustomRecord = { value: record.value, timestamp: record.timestamp, key: record.key };
      guarded(ctx, record.value, "processElement", () => fn.processElement(r, context));
    },
    onTimer(timer, ctx) {
      const onTimer = fn.onTimer;
      if (onTimer === undefined || !timer.namespace.startsWith(TIMER_PREFIX)) return;
      const t: CustomTimer = { time: timer.time, domain: timer.domain, tag: timer.namespace.slice(TIMER_PREFIX.length) };
      guarded(ctx, { timer: { time: t.time, domain: t.domain, tag: t.tag } }, "onTimer", () => onTimer.call(fn, t, context));
    },
  };
}
