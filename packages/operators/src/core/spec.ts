// An operator's spec: the one description of it that the palette, the inspector form, the
// validator and the runner all read (n8n's node description, Arroyo's connector schema).
import type { z } from "zod";
import type { CustomFunctionFactory } from "../operators/process-custom/process-custom";
import type { JsonObject, Key, Operator } from "./api";

/**
 * Computes a record's key in canonical form (use `canonicalKey` from ./keys). Throws a
 * `KeyError` (or any Error) when the record has no usable key; the engine then sends the record
 * to the node's `errors` port (a dead letter when unconnected) with that message.
 */
export type KeySelector = (value: JsonObject) => Key;

/**
 * What flows on a port. `keyed` streams carry record.key; `reference` streams are broadcast
 * side inputs (enrichment tables); `side` ports carry records diverted from the main flow.
 */
export type StreamKind = "stream" | "keyed" | "reference";

export type OperatorCategory = "source" | "keying" | "transform" | "window" | "pattern" | "enrichment" | "custom" | "sink";

export interface InputPortSpec {
  /** `in` is the main input; edges name other inputs as `node:port`. */
  id: string;
  label: string;
  /** Kinds this input accepts; a connection from another kind is refused with the reason. */
  accepts: readonly StreamKind[];
  /** Whether several edges may feed this input (a union of streams). */
  multiple?: boolean;
  required?: boolean;
  description?: string;
}

export interface OutputPortSpec {
  /** `out` is the main output; side outputs have their own ids (`late`, `errors`, `expired`, `miss`). */
  id: string;
  label: string;
  /** `same` keeps the kind of the main input (filter on a keyed stream stays keyed). */
  kind: StreamKind | "same";
  side?: boolean;
  description?: string;
}

/** What the validator and the runner need to know of the surrounding graph when checking params. */
export interface ParamCheckContext {
  nodeId: string;
  /** Fields known to exist on the input records (declared by sources or inferred); undefined when unknown. */
  inputFields?: readonly string[];
}

export interface ParamIssue {
  severity: "error" | "warning";
  /** Dotted path of the param, e.g. `aggregate.field`; absent for the node as a whole. */
  param?: string;
  message: string;
  /** A stable code for the editor and tests (`unknown-field`, `expression-syntax`); default `param-check`. */
  code?: string;
}

/** See OperatorSpec.impliedTimers. */
export interface ImpliedTimers {
  /** The keyed state they follow from. */
  state: string;
  /** Their namespaces: restored timers of these are dropped where the heap storage schedules that work itself. */
  namespaces: readonly string[];
  /** The [time, namespace] timers of `key`, given its entry in that state in stored form (as snapshots hold it). */
  of(key: Key, stored: unknown): Array<[time: number, namespace: string]>;
}

/**
 * How long a stateful operator keeps per-key state, for the validator's state-growth warnings
 * (unbounded keys feeding state without TTL; TTL shorter than the window it serves).
 */
export interface StateRetention {
  /** State TTL in ms; undefined when the state has none. */
  ttlMs?: number;
  /** The param that sets ttlMs, for the warning to point at. */
  ttlParam?: string;
  /** The span of event time the state must cover (a window, a velocity window). */
  windowMs?: number;
  /** State is freed by timers (a window's purge, a deadline) even without a TTL. */
  freedByTimers?: boolean;
}

/** Per-node facts the runner needs to create an instance. */
export interface OperatorInit {
  nodeId: string;
  /** Names of the node's connected output ports, so operators can tell where a side output goes. */
  connectedOutputs: ReadonlySet<string>;
  /**
   * process.custom only: turns the user's code into a function run in the runner's sandbox. The
   * engine never creates one (it stays pure): the runner injects it through
   * LocalJobOptions.operatorServices; without it process.custom refuses to run. Other operators
   * ignore it.
   */
  customFunctionFactory?: CustomFunctionFactory;
  /** settings.maxStateBytesPerKey of the job: process.custom fails the job when a key keeps more. */
  maxStateBytesPerKey?: number;
}

/** The services the runner injects into every operator's init (LocalJobOptions.operatorServices). */
export type OperatorServices = Pick<OperatorInit, "customFunctionFactory">;

export interface OperatorSpec<P extends z.ZodType = z.ZodType> {
  type: string;
  /** Bumped when params change incompatibly; older versions stay loadable through `migrate`. */
  version: number;
  category: OperatorCategory;
  title: string;
  /** One line for the palette. */
  summary: string;
  /** Markdown docs for the palette hover and the inspector: semantics, state, pitfalls. */
  docs: string;
  params: P;
  inputs: readonly InputPortSpec[];
  outputs: readonly OutputPortSpec[];
  /** A keyed operator refuses an unkeyed main input (unless it keys by itself, like dedup). */
  requiresKeyedInput: boolean;
  /** Keeps keyed state or timers: checkpointed, counted, and shown with state size on the canvas. */
  stateful: boolean;
  /** Graph-aware checks beyond the zod schema (unknown fields in expressions, TTL versus window, ...). */
  check?(params: z.infer<P>, ctx: ParamCheckContext): ParamIssue[];
  /**
   * Fields of the records on the main output, given those of the main input (undefined when
   * unknown upstream): the validator's unknown-field checks and the editor's completion read it.
   * Absent, or returning undefined, means "unknown" and turns those checks off downstream.
   */
  outputFields?(params: z.infer<P>, inputFields: readonly string[] | undefined): readonly string[] | undefined;
  /**
   * For stateful operators: how their state is bounded. Absent: the validator reads the params
   * the catalog names consistently (`ttlMs`, `windowMs`, `sizeMs`, `gapMs`, `afterMs`, `deadlineMs`).
   */
  stateRetention?(params: z.infer<P>): StateRetention;
  /**
   * For operators whose heap storage (an adopted table) keeps in its own schedule what their handle
   * storage holds as event-time timers: those timers as a function of one key's stored state. Heap
   * snapshots leave them out, since listing every key's timer at every checkpoint cost more than
   * packing the state that changed; a restore where the handle storage runs (another backend)
   * derives them from the restored state, and queryable state lists them.
   */
  impliedTimers?(params: z.infer<P>): ImpliedTimers | undefined;
  /** Upgrades params written for an older version. */
  migrate?(params: Record<string, unknown>, fromVersion: number): Record<string, unknown>;
  /**
   * For operators that key the stream themselves: `keyBy` (by its `field`) and operators that need
   * no keyBy in front (dedup keys by its own `field`). The engine calls the selector on every
   * record before processElement, so state and timers are scoped to that key and the operator's
   * outputs carry it (an implicit keyBy; Flink's KeySelector). Absent: records keep the key they
   * arrive with.
   */
  keySelector?(params: z.infer<P>): KeySelector;
  /**
   * Params that name a file on the runner (source.file's and sink.file's `path`): the validator keeps
   * them relative and inside the runner's data folder, and the runner resolves them there.
   */
  filePaths?: readonly string[];
  /** For sinks: the param naming the output written (a file or a Kafka topic), so that each output has one writer. */
  writes?: { param: string; kind: "file" | "topic" };
  /** Absent for sources and sinks, whose I/O the runner provides. */
  create?(params: z.infer<P>, init: OperatorInit): Operator;
}

/** Keeps the param type of each spec while collecting them in one catalog. */
export function defineOperator<P extends z.ZodType>(spec: OperatorSpec<P>): OperatorSpec<P> {
  return spec;
}
