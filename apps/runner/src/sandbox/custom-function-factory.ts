// process.custom for real: the engine's CustomFunctionFactory on top of the sandbox.
//
// The engine calls the user's function synchronously with a live ctx (state handles, timers,
// output); the sandbox (./sandbox.ts) runs it asynchronously, in another process, over a state
// snapshot in and a batch of effects out. This module joins the two:
//  - each call blocks the job thread on a SyncBridge (./sync-bridge.ts) whose worker thread owns
//    the job's sandboxes (one process per process.custom node);
//  - it sends the key's current state for every state name the function is known to use, read
//    through the live ctx (the engine's key-scoped handles, TTL applied);
//  - it learns those names from Effects.touched. A name seen for the first time reads as empty in
//    that call; when the host does hold data under it for the key (after a restore, the names are
//    learned again), the call is run again with it included and the first run's effects are
//    dropped. The call is side-effect free on the host: the sandbox only returns effects, applied
//    here afterwards (module-level variables of the user's code do see both runs; see below);
//  - it applies the effects through the ctx: state (value update/clear; list appends as add() so
//    that per-element TTL stamps stay, else update; map entries put/removed by difference, per
//    entry), timers (register/delete, event or processing time), outputs and side outputs;
//  - a SandboxError (exception, timeout, memory, crash, invalid output) is thrown to the engine's
//    guard, which sends the record (or timer) to `errors` with the message and goes on; the state
//    writes (and outputs) an exception made before it threw are applied first, as in-process.
//    Broken code (syntax, top-level failure) fails the factory, so the job does not start.
//
// Limits: one call is two thread hops and one IPC round trip, ≈ 150–200 µs: about 5–6 k calls per
// second per job thread on a busy 2-core machine (the bridge's own round trip is ≈ 15 µs; the
// sandbox's IPC ≈ 70–80 µs), and the job thread (in the service, the event loop) is blocked
// meanwhile, up to timeoutMs for a looping call. Module-level variables of the user's code are not
// checkpointed and see a call twice when it is re-run (only on the first use of a restored name).
// Every known state name of the key is copied in for every call: keep per-key state small and
// names fixed (a map state, not one name per value). When a call fails for a timeout, the memory
// limit or a crash, nothing it did is applied (its isolate is gone); an exception keeps its writes.
import type {
  CustomContext,
  CustomFunctionFactory,
  CustomProcessFunction,
  CustomRecord,
  CustomSidePort,
  CustomStateOptions,
  CustomTimer,
  JsonObject,
  JsonValue,
} from "@keyflow/operators";
import { SandboxError } from "./errors";
import type { CallAnswer, CallParams, OpenAnswer, SerializedSandboxError } from "./custom-function-worker";
import { sandboxCallWallMs, type SandboxOptions } from "./sandbox";
import { BridgeError, SyncBridge } from "./sync-bridge";
import type { Effects, StateCell, StateKind, StateSnapshot } from "./types";

export interface CustomFunctionFactoryOptions {
  /** CPU budget of one processElement / onTimer call, ms. Default 50 (the sandbox's default). */
  timeoutMs?: number;
  /** The isolate's heap limit, MB. Default 64 (the sandbox's default). */
  memoryLimitMb?: number;
  /** Further sandbox options (tests: killGraceMs, permissionModel). timeoutMs/memoryLimitMb above win. */
  sandbox?: SandboxOptions;
  /** What the user's code printed (console.log…), by node. Default: dropped. */
  onLog?: (nodeId: string, line: string) => void;
  /** Bytes of the bridge's shared buffer (answers above are chunked). Default 1 MiB. */
  bridgeBufferBytes?: number;
}

export interface SandboxedFunctionStats {
  /** Sandbox calls made (re-runs included). */
  calls: number;
  /** Calls run again because a newly learned state name held data for the key. */
  reruns: number;
  /** Calls that failed with a SandboxError (their record or timer went to `errors`). */
  failures: number;
}

export interface SandboxedFunctions {
  /** Give to LocalJobOptions.operatorServices.customFunctionFactory. */
  readonly factory: CustomFunctionFactory;
  /** Kills the sandbox processes and the bridge's worker. Safe to call more than once. */
  close(): Promise<void>;
  stats(): SandboxedFunctionStats;
  /** The bridge, for tests. */
  readonly bridge: SyncBridge;
}

const HANDLER = new URL("./custom-function-worker.ts", import.meta.url);
/** process.custom's side outputs (its spec): what ctx.sideOutput accepts. */
const SIDE_PORTS: CustomSidePort[] = ["alerts", "errors"];
/** Runs of one call before giving up on learning its state names (each run learns at least one). */
const MAX_RUNS = 64;

/** The job-thread side of the job's sandboxed functions; one per job. Starts nothing until a process.custom node is created. */
export function createCustomFunctionFactory(opts: CustomFunctionFactoryOptions = {}): SandboxedFunctions {
  const options: SandboxOptions = {
    ...opts.sandbox,
    sidePorts: SIDE_PORTS,
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.memoryLimitMb !== undefined ? { memoryLimitMb: opts.memoryLimitMb } : {}),
  };
  // The sandbox's own deadlines (start, load, call, kill) come first; the bridge's is a backstop.
  const callDeadlineMs =
    (options.startTimeoutMs ?? 10_000) + (options.initTimeoutMs ?? 1_000) + sandboxCallWallMs(options.timeoutMs ?? 50) + (options.killGraceMs ?? 1_000) + 10_000;
  const bridge = new SyncBridge({
    handler: HANDLER,
    label: "process.custom's sandbox thread",
    callTimeoutMs: callDeadlineMs,
    ...(opts.bridgeBufferBytes !== undefined ? { bufferBytes: opts.bridgeBufferBytes } : {}),
  });
  const stats: SandboxedFunctionStats = { calls: 0, reruns: 0, failures: 0 };
  let nextId = 0;
  let closed = false;

  const factory: CustomFunctionFactory = (code, site) => {
    if (closed) throw new Error(`node "${site.nodeId}": process.custom: the job's sandboxes are closed`);
    const fn = new BridgedFunction(++nextId, site.nodeId, code, options, bridge, stats, callDeadlineMs, opts.onLog);
    fn.open();
    return fn.asProcessFunction();
  };

  return {
    factory,
    bridge,
    stats: () => ({ ...stats }),
    async close() {
      if (closed) return;
      closed = true;
      await bridge.close();
    },
  };
}

/** A state name as the function uses it (first declaration wins: a name keeps its kind and TTL). */
interface KnownName {
  kind: StateKind;
  ttlMs: number | undefined;
}

class BridgedFunction {
  private readonly known = new Map<string, KnownName>();
  private hasOnTimer = false;
  private openedIn = -1;

  constructor(
    private readonly id: number,
    private readonly nodeId: string,
    private readonly code: string,
    private readonly options: SandboxOptions,
    private readonly bridge: SyncBridge,
    private readonly stats: SandboxedFunctionStats,
    private readonly deadlineMs: number,
    private readonly onLog: ((nodeId: string, line: string) => void) | undefined,
  ) {}

  /** Compiles and loads the code in its sandbox; throws the SandboxError of broken code. */
  open(): void {
    const answer = this.bridge.call<OpenAnswer>("open", { id: this.id, code: this.code, options: this.options }, { timeoutMs: this.deadlineMs });
    if (!answer.ok) throw new SandboxError(answer.error.kind, `node "${this.nodeId}": ${answer.error.message}`, positionOf(answer.error));
    this.hasOnTimer = answer.hasOnTimer;
    // The call may have started a new worker (a new generation): the sandbox lives in that one.
    this.openedIn = this.bridge.generation;
  }

  asProcessFunction(): CustomProcessFunction {
    const processElement = (record: CustomRecord, ctx: CustomContext): void => {
      this.run(ctx, (state) => ({
        id: this.id,
        kind: "element",
        input: { ...this.common(ctx, state), record: record.value, timestamp: record.timestamp, inputPort: ctx.inputPort },
      }));
    };
    if (!this.hasOnTimer) return { processElement };
    const onTimer = (timer: CustomTimer, ctx: CustomContext): void => {
      this.run(ctx, (state) => ({ id: this.id, kind: "timer", input: { ...this.common(ctx, state), time: timer.time, domain: timer.domain, tag: timer.tag } }));
    };
    return { processElement, onTimer };
  }

  private common(ctx: CustomContext, state: StateSnapshot) {
    const processingTime = ctx.processingTime();
    return { key: ctx.key, watermark: ctx.watermark(), ...(Number.isFinite(processingTime) ? { processingTime } : {}), state };
  }

  /** One call: snapshot, sandbox, learn names (re-run if needed), apply effects; a failure is thrown to the engine's guard. */
  private run(ctx: CustomContext, params: (state: StateSnapshot) => CallParams): void {
    for (let attempt = 1; ; attempt++) {
      const state = this.snapshot(ctx);
      const answer = this.invoke(params(state));
      const effects = answer.ok ? answer.effects : answer.error.partialEffects;
      if (effects !== undefined && this.learn(effects, ctx)) {
        if (attempt >= MAX_RUNS) {
          this.stats.failures++;
          throw new Error(`process.custom: the call kept using new state names (${attempt} runs); use fewer names (a map state instead of one name per value)`);
        }
        this.stats.reruns++;
        continue;
      }
      if (effects !== undefined) this.apply(effects, state, ctx);
      if (!answer.ok) {
        this.stats.failures++;
        throw new Error(messageOf(answer.error));
      }
      return;
    }
  }

  private invoke(params: CallParams): CallAnswer {
    // The bridge's worker restarted (it crashed or hung): this function's sandbox went with it.
    if (this.openedIn !== this.bridge.start()) this.open();
    this.stats.calls++;
    try {
      return this.bridge.call<CallAnswer>("call", params, { timeoutMs: this.deadlineMs });
    } catch (e) {
      // The bridge's worker died or hung (it restarts for the next call, and this function's sandbox with it).
      if (e instanceof BridgeError) return { ok: false, error: { kind: "crash", message: `process.custom: ${e.message}` } };
      throw e;
    }
  }

  /** The key's state for every known name, read through the live ctx (expired entries are not returned). */
  private snapshot(ctx: CustomContext): StateSnapshot {
    const snap: StateSnapshot = {};
    for (const [name, k] of this.known) {
      const cell = readCell(ctx, name, k);
      if (cell !== undefined) setOwn(snap, name, cell);
    }
    return snap;
  }

  /** Learns the names the call touched; true when one of them is new and holds data for this key (the call must run again). */
  private learn(effects: Effects, ctx: CustomContext): boolean {
    let rerun = false;
    for (const t of effects.touched) {
      if (this.known.has(t.name)) continue;
      const k: KnownName = { kind: t.kind, ttlMs: t.ttlMs };
      this.known.set(t.name, k);
      if (readCell(ctx, t.name, k) !== undefined) rerun = true;
    }
    return rerun;
  }

  private apply(effects: Effects, sent: StateSnapshot, ctx: CustomContext): void {
    for (const u of effects.state) {
      const k = this.known.get(u.name);
      const opts = stateOptions(u.ttlMs ?? k?.ttlMs);
      const before = Object.hasOwn(sent, u.name) ? sent[u.name] : undefined;
      const kind = u.cell?.kind ?? k?.kind;
      if (kind === "value") {
        const h = ctx.state.value(u.name, opts);
        if (u.cell?.kind === "value") h.update(u.cell.value);
        else h.clear();
      } else if (kind === "list") {
        const h = ctx.state.list(u.name, opts);
        if (u.cell?.kind !== "list") h.clear();
        else {
          // Appended to what was sent: add() the new elements, so that the older ones keep their TTL stamps.
          const old = before?.kind === "list" ? before.values : [];
          const next = u.cell.values;
          if (next.length >= old.length && old.every((v, i) => jsonEqual(v, next[i]))) {
            for (let i = old.length; i < next.length; i++) h.add(next[i] as JsonValue);
          } else h.update(next);
        }
      } else if (kind === "map") {
        const h = ctx.state.map(u.name, opts);
        if (u.cell?.kind !== "map") h.clear();
        else {
          const old = before?.kind === "map" ? before.entries : {};
          const next = u.cell.entries;
          for (const key of Object.keys(old)) if (!Object.hasOwn(next, key)) h.remove(key);
          for (const key of Object.keys(next)) {
            const v = next[key] as JsonValue;
            if (!Object.hasOwn(old, key) || !jsonEqual(old[key], v)) h.put(key, v);
          }
        }
      }
    }
    for (const t of effects.timers) {
      if (t.domain === "event") {
        if (t.op === "register") ctx.timers.registerEventTime(t.time, t.tag);
        else ctx.timers.deleteEventTime(t.time, t.tag);
      } else if (t.op === "register") ctx.timers.registerProcessingTime(t.time, t.tag);
      else ctx.timers.deleteProcessingTime(t.time, t.tag);
    }
    for (const o of effects.outputs) ctx.output(o.value, o.timestamp);
    // The sandbox accepted only process.custom's side ports (SIDE_PORTS); anything else would be its bug.
    for (const o of effects.sideOutputs) ctx.sideOutput(o.port as CustomSidePort, o.value, o.timestamp);
    if (this.onLog !== undefined) for (const line of effects.logs) this.onLog(this.nodeId, line);
  }
}

function readCell(ctx: CustomContext, name: string, k: KnownName): StateCell | undefined {
  const opts = stateOptions(k.ttlMs);
  switch (k.kind) {
    case "value": {
      const v = ctx.state.value(name, opts).value();
      return v === undefined ? undefined : { kind: "value", value: v };
    }
    case "list": {
      const values = ctx.state.list(name, opts).get();
      return values.length === 0 ? undefined : { kind: "list", values: [...values] };
    }
    case "map": {
      const h = ctx.state.map(name, opts);
      if (h.isEmpty()) return undefined;
      const entries: { [mapKey: string]: JsonValue } = {};
      for (const [key, v] of h.entries()) setOwn(entries, key, v);
      return { kind: "map", entries };
    }
  }
}

const stateOptions = (ttlMs: number | undefined): CustomStateOptions | undefined => (ttlMs === undefined ? undefined : { ttlMs });

/** Sets an own property, even one named "__proto__". */
function setOwn<V>(obj: { [k: string]: V }, key: string, value: V): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const key of ka) if (!Object.hasOwn(b, key) || !jsonEqual((a as JsonObject)[key], (b as JsonObject)[key])) return false;
  return true;
}

/** The message the engine's guard puts in the `errors` record (after `node "x": processElement threw: `). */
function messageOf(e: SerializedSandboxError): string {
  // "process.custom: processElement threw Error: boom (process.custom.ts:3:9)" → "Error: boom (process.custom.ts:3:9)"
  if (e.kind === "exception") return e.message.replace(/^process\.custom: (?:processElement|onTimer) threw /, "");
  return e.message;
}

function positionOf(e: SerializedSandboxError): { line?: number; column?: number } {
  return { ...(e.line === undefined ? {} : { line: e.line }), ...(e.column === undefined ? {} : { column: e.column }) };
}
