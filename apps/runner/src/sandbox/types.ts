// The data that crosses the sandbox boundary, in both directions. Everything here is plain JSON:
// the isolate never receives a host object or function, and the host never receives one of the
// isolate's (see the threat model in ./index.ts).
import type { JsonObject, JsonValue } from "@keyflow/operators";

/** A key's state as the host holds it, by the name the user code gives it. */
export type StateCell =
  | { kind: "value"; value: JsonValue }
  | { kind: "list"; values: JsonValue[] }
  | { kind: "map"; entries: { [mapKey: string]: JsonValue } };
export type StateKind = StateCell["kind"];

/**
 * The state of the current key: every name the host holds for it. A name missing here reads as
 * empty (`value()` undefined, an empty list or map). Values are copied into the isolate.
 */
export type StateSnapshot = { [name: string]: StateCell };

interface CallInputBase {
  /** The current key (ctx.key). */
  key: string | undefined;
  /** The operator's current watermark (ctx.watermark()); may be ±Infinity. */
  watermark: number;
  /** The engine's injected processing-time clock (ctx.processingTime()); the code sees no other clock. */
  processingTime?: number;
  /** The state of `key`; absent names read as empty. */
  state?: StateSnapshot;
}

/** One record for processElement(record, ctx). */
export interface ProcessElementInput extends CallInputBase {
  record: JsonObject;
  /** The record's event time (record.timestamp and ctx.timestamp). */
  timestamp: number;
  /** ctx.inputPort; default "in". */
  inputPort?: string;
}

/** One timer firing for onTimer(timer, ctx). */
export interface OnTimerInput extends CallInputBase {
  time: number;
  domain: "event" | "processing";
  /** The tag the code registered the timer with (default ""). */
  tag?: string;
}

export interface Emitted {
  value: JsonObject;
  timestamp: number;
}
export interface SideEmitted extends Emitted {
  port: string;
}

/** The final content of a state name the call wrote (`cell: null`: cleared). */
export interface StateUpdate {
  name: string;
  cell: StateCell | null;
  /** The TTL the code declared for this name, if any (ctx.state.value(name, { ttlMs })). */
  ttlMs?: number;
}

/** A state name the call touched (read or written), with its kind: lets the host learn which names to send. */
export interface StateTouch {
  name: string;
  kind: StateKind;
  ttlMs?: number;
}

export interface TimerUpdate {
  op: "register" | "delete";
  domain: "event" | "processing";
  time: number;
  tag: string;
}

/** What one call did, in order within each list. The host applies them; nothing happened before. */
export interface Effects {
  outputs: Emitted[];
  sideOutputs: SideEmitted[];
  /** One entry per written name, with its final content. */
  state: StateUpdate[];
  touched: StateTouch[];
  timers: TimerUpdate[];
  /** What the code printed with console.log/warn/error (capped). */
  logs: string[];
}

export const emptyEffects = (): Effects => ({ outputs: [], sideOutputs: [], state: [], touched: [], timers: [], logs: [] });

// ---- The parent ↔ child protocol (IPC, JSON) --------------------------------------------------

export interface ChildConfig {
  /** The transpiled JavaScript (CommonJS body). */
  js: string;
  memoryLimitMb: number;
  /** A call's CPU budget (the isolate thread's CPU time), ms. */
  timeoutMs: number;
  /** The wall-clock backstop of a call, ms (sandboxCallWallMs of timeoutMs). */
  wallTimeoutMs: number;
  initTimeoutMs: number;
  maxEffectsBytes: number;
  sidePorts: string[] | null;
}

export type ToChild =
  | { t: "init"; config: ChildConfig }
  | { t: "call"; id: number; kind: "element" | "timer"; input: string };

/** A failure the child saw outside the user's code; `stack` positions are still in the transpiled JS. */
export interface ChildError {
  kind: "init" | "timeout" | "memory" | "invalid-output" | "internal";
  name?: string;
  message: string;
  stack?: string;
  /** The user's script did not compile (V8's SyntaxError; the message ends with "[file:line:column]"). */
  compile?: boolean;
  /** A timeout's CPU time in the call, ms. */
  cpuMs?: number;
}

export type FromChild =
  | { t: "ready"; hasOnTimer: boolean }
  | { t: "init-error"; error: ChildError }
  /** The isolate's answer, JSON text as it left the isolate (untrusted: the parent validates it). */
  | { t: "result"; id: number; raw: string }
  | { t: "failure"; id: number; error: ChildError };
