// The runner's side of the sandbox: transpiles the code, forks the sandbox process (./child.mjs),
// sends it one call at a time as JSON text, enforces a wall-clock deadline with SIGKILL, checks
// what comes back, and restarts the process after a crash. See ./index.ts for the threat model.
import { fork, type ChildProcess } from "node:child_process";
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxError, type SandboxErrorKind } from "./errors";
import { USER_SOURCE_NAME, mapPositions, transpileUserCode, type SourceMap } from "./transpile";
import type { ChildConfig, ChildError, Effects, FromChild, OnTimerInput, ProcessElementInput, ToChild } from "./types";
import { InvalidEffects, parseAnswer } from "./validate";

/**
 * The wall-clock backstop of a call with a CPU budget of `timeoutMs`: when an endless loop is
 * stopped. Generous, because on an overloaded machine a call gets a fraction of a core: a call that
 * ends before it is judged by its CPU time alone.
 */
export function sandboxCallWallMs(timeoutMs: number): number {
  return timeoutMs * 4 + 1000;
}

export interface SandboxOptions {
  /** The isolate's heap limit in MB (isolated-vm's memoryLimit; min 8). Default 64. */
  memoryLimitMb?: number;
  /**
   * CPU budget of one processElement / onTimer call, in ms (CPU time, so that a loaded machine does
   * not fail a call that fits; the call is stopped at sandboxCallWallMs of wall-clock time). Default 50.
   */
  timeoutMs?: number;
  /** Budget of the module's top-level code, in ms. Default 1000. */
  initTimeoutMs?: number;
  /** Largest batch of effects (JSON characters) one call may return. Default 4 MiB. */
  maxEffectsBytes?: number;
  /** Ports ctx.sideOutput accepts; null: any. Default ["alerts", "errors"] (process.custom's ports). */
  sidePorts?: readonly string[] | null;
  /** Wall-clock slack after timeoutMs before the process is killed (isolated-vm stops the isolate itself first). Default 1000. */
  killGraceMs?: number;
  /** Time the process has to start and load the code. Default 10000. */
  startTimeoutMs?: number;
  /**
   * Run the process under Node's permission model (reads limited to the sandbox's files and
   * isolated-vm; no writes, child processes or workers): a second wall behind the isolate.
   * Default true.
   */
  permissionModel?: boolean;
}

export interface SandboxedProcessFunction {
  /** Starts the process and loads the code; rejects with a `syntax` or `init` SandboxError. Optional: calls do it. */
  ready(): Promise<{ hasOnTimer: boolean }>;
  /** Runs processElement(record, ctx) on one record; rejects with a SandboxError. Calls run one at a time, in order. */
  processElement(input: ProcessElementInput): Promise<Effects>;
  /** Runs onTimer(timer, ctx); no effects if the code exports no onTimer. */
  onTimer(input: OnTimerInput): Promise<Effects>;
  /** Kills the process; pending and later calls reject with a `closed` SandboxError. */
  close(): Promise<void>;
  /** The sandbox process's pid, while one runs. */
  readonly pid: number | undefined;
  /** How many times a sandbox process was started. */
  readonly starts: number;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const CHILD = join(HERE, "child.mjs");
const PRELUDE = join(HERE, "prelude.mjs");
const DEFAULT_SIDE_PORTS = ["alerts", "errors"] as const;
/** After this many starts in a row that crash before the code is loaded, the sandbox gives up. */
const MAX_FAILED_STARTS = 3;
const STDERR_TAIL = 4000;

let ivmEntry: string | undefined;
function isolatedVmEntry(): string {
  ivmEntry ??= realpathSync(createRequire(import.meta.url).resolve("isolated-vm"));
  return ivmEntry;
}

function childExecArgv(permissionModel: boolean, maxEffectsBytes: number): string[] {
  // isolated-vm needs --no-node-snapshot on Node ≥ 20. The process's own heap holds JSON text only.
  const heapMb = Math.max(64, Math.ceil((maxEffectsBytes * 8) / 2 ** 20));
  const argv = ["--no-node-snapshot", "--no-warnings", `--max-old-space-size=${heapMb}`];
  if (permissionModel) {
    const ivm = isolatedVmEntry();
    const flag = process.allowedNodeEnvironmentFlags.has("--permission") ? "--permission" : "--experimental-permission";
    argv.push(flag, "--allow-addons", `--allow-fs-read=${realpathSync(CHILD)}`, `--allow-fs-read=${realpathSync(PRELUDE)}`, `--allow-fs-read=${dirname(ivm)}/*`);
  }
  return argv;
}

/** The process's own complaint, e.g. isolated-vm's native module missing (`npm rebuild isolated-vm`). */
function firstErrorLine(stderr: string): string {
  const line = stderr.split("\n").find((l) => /^\s*(\w*Error|Error \[\w+\]|FATAL ERROR)\b.*:/.test(l));
  return line === undefined ? "" : `: ${line.trim().slice(0, 300)}`;
}

const encodeNumber = (n: number): number | string => (Number.isFinite(n) ? n : n > 0 ? "Infinity" : "-Infinity");

function checkTime(n: unknown, what: string): void {
  if (typeof n !== "number" || Number.isNaN(n)) throw new TypeError(`sandbox: ${what} must be a number`);
}

interface Pending {
  resolve: (raw: string) => void;
  reject: (e: SandboxError) => void;
  timer: NodeJS.Timeout;
  what: string;
}

interface Running {
  proc: ChildProcess;
  ready: Promise<boolean>;
  /** Set when we kill it, so that its exit is reported for what it is. */
  killedFor: "timeout" | "closed" | "start-timeout" | undefined;
  stderr: string;
  loaded: boolean;
}

class Sandbox implements SandboxedProcessFunction {
  private running: Running | undefined;
  private finalError: SandboxError | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private failedStarts = 0;
  private startCount = 0;
  private readonly config: ChildConfig;
  private readonly sidePorts: readonly string[] | null;
  private readonly timeoutMs: number;
  private readonly killGraceMs: number;
  private readonly startTimeoutMs: number;
  private readonly memoryLimitMb: number;
  private readonly execArgv: string[];

  constructor(
    js: string,
    private readonly map: SourceMap,
    options: SandboxOptions,
  ) {
    this.memoryLimitMb = Math.max(8, Math.floor(options.memoryLimitMb ?? 64));
    this.timeoutMs = Math.max(1, options.timeoutMs ?? 50);
    this.killGraceMs = Math.max(10, options.killGraceMs ?? 1000);
    this.startTimeoutMs = Math.max(100, options.startTimeoutMs ?? 10_000);
    this.sidePorts = options.sidePorts === null ? null : [...(options.sidePorts ?? DEFAULT_SIDE_PORTS)];
    const maxEffectsBytes = Math.max(1024, options.maxEffectsBytes ?? 4 * 2 ** 20);
    this.config = {
      js,
      memoryLimitMb: this.memoryLimitMb,
      timeoutMs: this.timeoutMs,
      wallTimeoutMs: sandboxCallWallMs(this.timeoutMs),
      initTimeoutMs: Math.max(1, options.initTimeoutMs ?? 1000),
      maxEffectsBytes,
      sidePorts: this.sidePorts === null ? null : [...this.sidePorts],
    };
    this.execArgv = childExecArgv(options.permissionModel ?? true, maxEffectsBytes);
  }

  get pid(): number | undefined {
    return this.running?.proc.pid;
  }
  get starts(): number {
    return this.startCount;
  }

  ready(): Promise<{ hasOnTimer: boolean }> {
    return this.enqueue(async () => ({ hasOnTimer: await this.ensureRunning().ready }));
  }

  processElement(input: ProcessElementInput): Promise<Effects> {
    return this.enqueue(() => {
      checkTime(input.timestamp, "timestamp");
      checkTime(input.watermark, "watermark");
      const payload = {
        key: input.key,
        record: input.record,
        timestamp: input.timestamp,
        watermark: encodeNumber(input.watermark),
        processingTime: input.processingTime,
        state: input.state ?? {},
        inputPort: input.inputPort ?? "in",
      };
      return this.call("element", JSON.stringify(payload), "processElement");
    });
  }

  onTimer(input: OnTimerInput): Promise<Effects> {
    return this.enqueue(() => {
      checkTime(input.time, "time");
      checkTime(input.watermark, "watermark");
      const payload = {
        key: input.key,
        time: input.time,
        domain: input.domain,
        tag: input.tag ?? "",
        watermark: encodeNumber(input.watermark),
        processingTime: input.processingTime,
        state: input.state ?? {},
      };
      return this.call("timer", JSON.stringify(payload), "onTimer");
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const r = this.running;
    if (r !== undefined) {
      const exited = new Promise<void>((resolve) => {
        if (r.proc.exitCode !== null || r.proc.signalCode !== null) resolve();
        else r.proc.once("close", () => resolve());
      });
      this.kill(r, "closed");
      await exited;
    }
  }

  // ---- internals ------------------------------------------------------------------------------

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = (): Promise<T> => {
      if (this.closed) return Promise.reject(new SandboxError("closed", "process.custom: the sandbox is closed"));
      if (this.finalError !== undefined) return Promise.reject(this.finalError);
      return fn();
    };
    const p = this.tail.then(run, run);
    this.tail = p.catch(() => undefined);
    return p;
  }

  private async call(kind: "element" | "timer", input: string, what: string): Promise<Effects> {
    const r = this.ensureRunning();
    await r.ready;
    const raw = await new Promise<string>((resolve, reject) => {
      const id = ++this.nextId;
      // isolated-vm stops the isolate at the wall-clock backstop; this deadline is for the case it cannot.
      const timer = setTimeout(() => this.kill(r, "timeout"), this.config.wallTimeoutMs + this.killGraceMs);
      this.pending.set(id, { resolve, reject, timer, what });
      this.send(r, { t: "call", id, kind, input });
    });
    let answer;
    try {
      answer = parseAnswer(raw, this.sidePorts);
    } catch (e) {
      if (e instanceof InvalidEffects) {
        throw new SandboxError("invalid-output", `process.custom: ${what} returned effects that are not valid: ${e.message}`);
      }
      throw e;
    }
    if (answer.ok) return answer.effects;
    const { name, message, stack } = answer.error;
    const located = this.locate(message, stack);
    throw new SandboxError("exception", `process.custom: ${what} threw ${name}: ${located.message}${located.where}`, {
      ...located.details,
      ...(answer.partial === undefined ? {} : { partialEffects: answer.partial }),
    });
  }

  /** Maps positions of the isolate's message and stack to the TypeScript. */
  private locate(message: string, stack: string | undefined) {
    const msg = mapPositions(message, this.map);
    const st = stack === undefined ? undefined : mapPositions(stack, this.map);
    const pos = msg.first ?? st?.first;
    const userStack =
      st === undefined
        ? undefined
        : st.text
            .split("\n")
            .filter((line, i) => i === 0 || line.includes(USER_SOURCE_NAME))
            .join("\n");
    return {
      message: msg.text,
      where: pos === undefined || msg.first !== undefined ? "" : ` (${USER_SOURCE_NAME}:${pos.line}:${pos.column})`,
      details: { ...(pos === undefined ? {} : { line: pos.line, column: pos.column }), ...(userStack === undefined ? {} : { userStack }) },
    };
  }

  private send(r: Running, msg: ToChild): void {
    try {
      r.proc.send(msg);
    } catch {
      // The process is gone: its exit handler rejects what is pending.
    }
  }

  private kill(r: Running, why: NonNullable<Running["killedFor"]>): void {
    r.killedFor ??= why;
    try {
      r.proc.kill("SIGKILL");
    } catch {
      // Already dead.
    }
  }

  private ensureRunning(): Running {
    if (this.running !== undefined) return this.running;
    this.startCount++;
    const proc = fork(CHILD, [isolatedVmEntry()], {
      execArgv: this.execArgv,
      // No secrets to find, even after an escape; TZ pinned so that date arithmetic is the same on every machine.
      env: { TZ: "UTC" },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      serialization: "json",
    });
    let settleReady: { resolve: (hasOnTimer: boolean) => void; reject: (e: SandboxError) => void } | undefined;
    const r: Running = {
      proc,
      killedFor: undefined,
      stderr: "",
      loaded: false,
      ready: new Promise<boolean>((resolve, reject) => {
        settleReady = { resolve, reject };
      }),
    };
    r.ready.catch(() => undefined); // observed by whoever awaits it
    this.running = r;
    // The runner may exit while a sandbox is idle; a call in flight keeps it alive by its timer.
    proc.unref();
    proc.channel?.unref();
    const startTimer = setTimeout(() => this.kill(r, "start-timeout"), this.startTimeoutMs + this.config.initTimeoutMs);

    // Neither the pipe nor the channel keeps the runner alive (see unref above).
    if (proc.stderr !== null && "unref" in proc.stderr && typeof proc.stderr.unref === "function") proc.stderr.unref();
    proc.stderr?.setEncoding("utf8");
    proc.stderr?.on("data", (chunk: string) => {
      r.stderr = (r.stderr + chunk).slice(-STDERR_TAIL);
    });
    proc.on("error", () => {
      // Spawn failures end in "exit" (or never start): handled there and by the start timer.
    });
    proc.on("message", (msg: FromChild) => {
      switch (msg.t) {
        case "ready":
          clearTimeout(startTimer);
          r.loaded = true;
          this.failedStarts = 0;
          settleReady?.resolve(msg.hasOnTimer);
          break;
        case "init-error": {
          clearTimeout(startTimer);
          this.finalError = this.initError(msg.error);
          settleReady?.reject(this.finalError);
          this.kill(r, "closed");
          break;
        }
        case "result":
        case "failure": {
          const p = this.pending.get(msg.id);
          if (p === undefined) return;
          this.pending.delete(msg.id);
          clearTimeout(p.timer);
          if (msg.t === "result") p.resolve(msg.raw);
          else p.reject(this.callError(msg.error, p.what));
          break;
        }
      }
    });
    // "close", not "exit": stderr is complete by then, and V8's fatal OOM report is on it.
    proc.on("close", (code, signal) => {
      clearTimeout(startTimer);
      if (this.running === r) this.running = undefined;
      const how = signal ?? `exit code ${code ?? "?"}`;
      const oom = /out of memory|heap limit|allocation failed|is_heap_oom = 1|Last few GCs/i.test(r.stderr);
      const kind: SandboxErrorKind =
        r.killedFor === "closed" ? "closed" : r.killedFor === "timeout" ? "timeout" : oom ? "memory" : "crash";
      if (!r.loaded && r.killedFor !== "closed") {
        this.failedStarts++;
        const err =
          r.killedFor === "start-timeout"
            ? new SandboxError("crash", `process.custom: the sandbox process did not start within ${this.startTimeoutMs} ms`, { processOutput: r.stderr })
            : new SandboxError(
                kind === "memory" ? "memory" : "crash",
                `process.custom: the sandbox process exited (${how}) while loading the code${firstErrorLine(r.stderr)}`,
                { processOutput: r.stderr },
              );
        if (this.failedStarts >= MAX_FAILED_STARTS) {
          this.finalError = new SandboxError("init", `${err.message}, ${this.failedStarts} times in a row: giving up`, { processOutput: r.stderr });
        }
        settleReady?.reject(err);
      } else {
        settleReady?.reject(new SandboxError("closed", "process.custom: the sandbox is closed"));
      }
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        clearTimeout(p.timer);
        p.reject(this.exitError(kind, how, p.what, r.stderr));
      }
    });

    this.send(r, { t: "init", config: this.config });
    return r;
  }

  private exitError(kind: SandboxErrorKind, how: string, what: string, stderr: string): SandboxError {
    switch (kind) {
      case "closed":
        return new SandboxError("closed", "process.custom: the sandbox is closed");
      case "timeout":
        return new SandboxError(
          "timeout",
          `process.custom: ${what} did not answer within ${this.config.wallTimeoutMs} ms; the sandbox process was killed (${how}) and restarts for the next call`,
        );
      case "memory":
        return new SandboxError("memory", `process.custom: ${what} ran the sandbox process out of memory; it restarts for the next call`, { processOutput: stderr });
      default:
        return new SandboxError("crash", `process.custom: the sandbox process exited (${how}) during ${what}; it restarts for the next call`, {
          processOutput: stderr,
        });
    }
  }

  private callError(e: ChildError, what: string): SandboxError {
    switch (e.kind) {
      case "timeout": {
        // The over-budget message carries no measured figure, so that a replay dead-letters the same bytes.
        const why =
          e.cpuMs !== undefined && e.cpuMs <= this.timeoutMs
            ? `did not finish within ${this.config.wallTimeoutMs} ms, with ${e.cpuMs} ms of CPU: the machine is overloaded`
            : `went over its CPU budget of ${this.timeoutMs} ms (an endless loop?)`;
        return new SandboxError("timeout", `process.custom: ${what} ${why}; it was stopped, and the next call starts from a fresh isolate`);
      }
      case "memory":
        return new SandboxError(
          "memory",
          `process.custom: ${what} went over the sandbox's ${this.memoryLimitMb} MB memory limit; it was stopped, and the next call starts from a fresh isolate`,
        );
      case "init":
        return this.initError(e);
      case "invalid-output":
        return new SandboxError("invalid-output", `process.custom: ${what} returned effects that are not valid: ${e.message}`);
      default:
        return new SandboxError("crash", `process.custom: the sandbox failed during ${what}: ${e.message}`);
    }
  }

  private initError(e: ChildError): SandboxError {
    if (e.kind === "timeout") {
      return new SandboxError("init", `process.custom: the code's top-level statements did not finish within ${this.config.initTimeoutMs} ms`);
    }
    if (e.kind === "memory") {
      return new SandboxError("init", `process.custom: the code's top-level statements went over the ${this.memoryLimitMb} MB memory limit`);
    }
    const located = this.locate(e.message, e.stack);
    if (e.compile === true) {
      // V8's compile errors read "Unexpected token ';' [process.custom.ts:3:9]".
      const m = /\s*\[process\.custom\.ts:\d+:\d+\]$/.exec(located.message);
      const text = m === null ? located.message : located.message.slice(0, m.index);
      const pos = located.details.line === undefined ? "" : ` at line ${located.details.line}, column ${located.details.column}`;
      return new SandboxError("syntax", `process.custom: syntax error${pos}: ${text}`, located.details);
    }
    return new SandboxError("init", `process.custom: loading the code failed: ${e.name ?? "Error"}: ${located.message}${located.where}`, located.details);
  }
}

/**
 * Compiles `code` (a TypeScript module exporting processElement and optionally onTimer) and
 * returns a handle that runs it in a sandbox process. Throws a `syntax` SandboxError for code that
 * does not parse; the process starts on the first call (or ready()).
 */
export function createSandboxedProcessFunction(code: string, options: SandboxOptions = {}): SandboxedProcessFunction {
  const t = transpileUserCode(code);
  if (!t.ok) {
    const first = t.diagnostics[0];
    const all = t.diagnostics
      .slice(0, 5)
      .map((d) => `line ${d.line}, column ${d.column}: ${d.message}`)
      .join("; ");
    throw new SandboxError("syntax", `process.custom: syntax error at ${all}`, first === undefined ? {} : { line: first.line, column: first.column });
  }
  return new Sandbox(t.js, t.map, options);
}
