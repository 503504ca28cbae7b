// A synchronous call into asynchronous code: the job thread (which runs the pure, synchronous
// engine) blocks on Atomics.wait while a dedicated worker thread performs the call on its own
// event loop and writes the answer into a SharedArrayBuffer, then Atomics.notify.
//
//   job thread                                   bridge worker (node:worker_threads)
//   ──────────                                   ───────────────────────────────────
//   postMessage({ id, method, params })  ──────▶ handler[method](params)  (async: IPC, timers…)
//   Atomics.wait(FLAG == EMPTY)                  JSON.stringify(answer) → UTF-8 bytes
//                                        ◀────── copy chunk into DATA, header: id, total, offset,
//                                                length; FLAG = CHUNK; Atomics.notify
//   copy the chunk out; FLAG = EMPTY;    ──────▶ (answer longer than DATA: wait for EMPTY, next chunk)
//   Atomics.notify; until total received
//
// Requests go by postMessage: the worker's event loop receives them while the job thread is
// blocked. Answers go through the shared buffer, because the blocked thread cannot receive a
// message. The header is the length prefix (total bytes of the answer); an answer larger than the
// data area is sent in chunks, each acknowledged by the job thread, so any size fits a fixed buffer.
//
// One call at a time, in order (the job thread is blocked during a call; a re-entrant call is
// refused). Failures of the bridge itself are BridgeErrors: the worker died (its uncaught
// exception or exit is reported through the buffer at once, flag DEAD), or gave no answer before
// the call's deadline (it is terminated). Either way the next call starts a new worker, and
// `generation` tells the caller so (whatever the handler held in the old worker is gone).
//
// The handler is a module the worker imports (through tsx, as bin/keyflow.mjs does):
//   export function createBridgeHandler(data): Record<string, (params) => Promise<unknown>>
// with an optional `close()` that SyncBridge.close() calls first.
import { Worker } from "node:worker_threads";

/** Int32 slots of the header, at the start of the shared buffer. */
const FLAG = 0;
const CALL = 1;
const TOTAL = 2;
const OFFSET = 3;
const LENGTH = 4;
const HEADER_BYTES = 32;

/** FLAG values. */
export const BRIDGE_EMPTY = 0;
export const BRIDGE_CHUNK = 1;
export const BRIDGE_DEAD = 2;
export const BRIDGE_HEADER_BYTES = HEADER_BYTES;

const WORKER_ENTRY = new URL("./sync-bridge-worker.mjs", import.meta.url);

export type BridgeErrorKind =
  /** The worker thread died (uncaught exception, exit, failed to load the handler). */
  | "crash"
  /** No answer before the call's deadline: the worker was terminated. */
  | "timeout"
  /** The handler's method threw or rejected (the worker is fine). */
  | "remote"
  /** close() was called. */
  | "closed"
  /** A call while another one is in progress on this bridge. */
  | "reentrant";

export class BridgeError extends Error {
  override readonly name = "BridgeError";
  constructor(
    readonly kind: BridgeErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export interface SyncBridgeOptions {
  /** The handler module the worker imports (a file URL; .ts is fine). */
  handler: URL;
  /** Passed to the handler's createBridgeHandler (structured-cloned). */
  handlerData?: unknown;
  /** Bytes of the shared data area; larger answers are chunked. Default 1 MiB. */
  bufferBytes?: number;
  /** Deadline of a call, ms, unless the call gives its own. Default 60 000. */
  callTimeoutMs?: number;
  /** Added to the deadline of the first call after a worker starts (loading tsx and the handler). Default 30 000. */
  startAllowanceMs?: number;
  /** What the bridge is for, in error messages. Default "the bridge's worker thread". */
  label?: string;
}

export interface BridgeRequest {
  id: number;
  method: string;
  params: unknown;
}

/** What the worker writes: the handler's value, or what it threw. */
export type BridgeAnswer = { ok: true; value: unknown } | { ok: false; error: { name: string; message: string } };

interface Running {
  worker: Worker;
  ctrl: Int32Array;
  data: Uint8Array;
  /** No call has completed on this worker yet. */
  fresh: boolean;
  dead: boolean;
}

export class SyncBridge {
  private running: Running | undefined;
  private nextId = 0;
  private busy = false;
  private closed = false;
  private gen = 0;
  private readonly bufferBytes: number;
  private readonly callTimeoutMs: number;
  private readonly startAllowanceMs: number;
  private readonly label: string;
  private readonly decoder = new TextDecoder();
  /** Calls made, and answers that needed more than one chunk (for tests and stats). */
  calls = 0;
  chunkedAnswers = 0;

  constructor(private readonly opts: SyncBridgeOptions) {
    this.bufferBytes = Math.max(64, Math.floor(opts.bufferBytes ?? 2 ** 20));
    this.callTimeoutMs = opts.callTimeoutMs ?? 60_000;
    this.startAllowanceMs = opts.startAllowanceMs ?? 30_000;
    this.label = opts.label ?? "the bridge's worker thread";
  }

  /** Bumped each time a worker starts: state the handler held in an earlier worker is gone. */
  get generation(): number {
    return this.gen;
  }

  /** Starts the worker if none runs; returns the generation the next call will use. */
  start(): number {
    if (this.closed) throw new BridgeError("closed", `${this.label} is closed`);
    this.ensureRunning();
    return this.gen;
  }

  /** The worker thread's id, while one runs. */
  get threadId(): number | undefined {
    return this.running?.worker.threadId;
  }

  /**
   * Calls `method` of the handler in the worker with `params` (structured-cloned) and returns its
   * value (through JSON: JSON values only). Blocks the calling thread until the answer is in.
   * Throws a BridgeError when the bridge fails, kind `remote` when the method threw.
   */
  call<T = unknown>(method: string, params: unknown, opts: { timeoutMs?: number } = {}): T {
    if (this.closed) throw new BridgeError("closed", `${this.label} is closed`);
    if (this.busy) throw new BridgeError("reentrant", `${this.label}: a call was made while another one was in progress`);
    this.busy = true;
    try {
      const r = this.ensureRunning();
      const id = ++this.nextId;
      this.calls++;
      const timeoutMs = (opts.timeoutMs ?? this.callTimeoutMs) + (r.fresh ? this.startAllowanceMs : 0);
      const request: BridgeRequest = { id, method, params };
      try {
        r.worker.postMessage(request);
      } catch (e) {
        // params that cannot be cloned (a function, a symbol): nothing was sent, the worker is fine.
        throw new BridgeError("remote", `${this.label}: cannot send the call to "${method}": ${e instanceof Error ? e.message : String(e)}`);
      }
      const answer = this.receive(r, id, method, timeoutMs);
      r.fresh = false;
      if (!answer.ok) throw new BridgeError("remote", `${this.label}: "${method}" failed: ${answer.error.name}: ${answer.error.message}`);
      return answer.value as T;
    } finally {
      this.busy = false;
    }
  }

  /** Stops the current worker without closing the bridge: the next call starts a new one (a new generation). */
  async restart(): Promise<void> {
    const r = this.running;
    if (r === undefined) return;
    this.abandon(r);
    await r.worker.terminate().catch(() => undefined);
  }

  /** Calls the handler's close() (if any, within `timeoutMs`) and terminates the worker. Later calls fail. */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.closed) return;
    const r = this.running;
    if (r !== undefined && !r.dead) {
      try {
        this.call("$close", null, { timeoutMs });
      } catch {
        // It is going away anyway.
      }
    }
    this.closed = true;
    this.running = undefined;
    if (r !== undefined) await r.worker.terminate().catch(() => undefined);
  }

  // ---- internals ------------------------------------------------------------------------------

  private ensureRunning(): Running {
    if (this.running !== undefined && !this.running.dead) return this.running;
    const sab = new SharedArrayBuffer(HEADER_BYTES + this.bufferBytes);
    const worker = new Worker(WORKER_ENTRY, {
      workerData: { sab, handler: this.opts.handler.href, handlerData: this.opts.handlerData },
    });
    // The job thread decides when the worker ends (close()); an idle worker does not keep the process alive.
    worker.unref();
    const r: Running = { worker, ctrl: new Int32Array(sab, 0, HEADER_BYTES / 4), data: new Uint8Array(sab, HEADER_BYTES), fresh: true, dead: false };
    // Seen only once the job thread's event loop runs again; the buffer's DEAD flag reports it at once.
    worker.on("error", () => {
      r.dead = true;
    });
    worker.on("exit", () => {
      r.dead = true;
    });
    this.running = r;
    this.gen++;
    return r;
  }

  /** Gathers the answer to call `id`, chunk by chunk. */
  private receive(r: Running, id: number, method: string, timeoutMs: number): BridgeAnswer {
    const { ctrl, data } = r;
    const deadline = performance.now() + timeoutMs;
    let out: Uint8Array | undefined;
    let got = 0;
    let chunks = 0;
    for (;;) {
      let flag = Atomics.load(ctrl, FLAG);
      while (flag === BRIDGE_EMPTY) {
        const left = deadline - performance.now();
        if (left <= 0) {
          this.abandon(r);
          throw new BridgeError("timeout", `${this.label} gave no answer to "${method}" within ${Math.round(timeoutMs)} ms; it was stopped and restarts for the next call`);
        }
        Atomics.wait(ctrl, FLAG, BRIDGE_EMPTY, left);
        flag = Atomics.load(ctrl, FLAG);
      }
      if (flag === BRIDGE_DEAD) {
        const length = Math.min(Atomics.load(ctrl, LENGTH), data.length);
        const why = length > 0 ? this.decoder.decode(data.slice(0, length)) : "it exited";
        this.abandon(r);
        throw new BridgeError("crash", `${this.label} crashed during "${method}": ${why}; it restarts for the next call`);
      }
      const callId = Atomics.load(ctrl, CALL);
      const total = Atomics.load(ctrl, TOTAL);
      const offset = Atomics.load(ctrl, OFFSET);
      const length = Atomics.load(ctrl, LENGTH);
      if (callId !== id || offset !== got || length < 0 || length > data.length || offset + length > total) {
        this.abandon(r);
        throw new BridgeError("crash", `${this.label} broke the protocol during "${method}" (chunk of call ${callId} at ${offset}+${length}/${total}, expected call ${id} at ${got})`);
      }
      chunks++;
      if (offset === 0 && length === total) {
        // The common case: one chunk. slice() copies out of the shared memory (TextDecoder refuses shared views).
        out = data.slice(0, length);
      } else {
        out ??= new Uint8Array(total);
        out.set(data.subarray(0, length), offset);
      }
      got += length;
      // Hand the data area back: the worker writes the next chunk (or the next call's answer) into it.
      Atomics.store(ctrl, FLAG, BRIDGE_EMPTY);
      Atomics.notify(ctrl, FLAG);
      if (got >= total) break;
    }
    if (chunks > 1) this.chunkedAnswers++;
    try {
      return JSON.parse(this.decoder.decode(out)) as BridgeAnswer;
    } catch (e) {
      throw new BridgeError("crash", `${this.label} sent an answer to "${method}" that is not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** The worker is dead or stuck: stop it; the next call starts another. */
  private abandon(r: Running): void {
    r.dead = true;
    if (this.running === r) this.running = undefined;
    void r.worker.terminate().catch(() => undefined);
  }
}

// ---- The worker's side ----------------------------------------------------------------------

export type BridgeHandler = Record<string, ((params: never) => unknown) | undefined> & { close?: () => unknown };

/**
 * Runs in the worker (./sync-bridge-worker.mjs calls it): answers each request with the handler's
 * method, writing the JSON answer into the shared buffer in chunks. Reports an uncaught exception
 * or an unexpected exit of the worker through the buffer (flag DEAD) so that the blocked job
 * thread learns of it at once.
 */
export function serveSyncBridge(port: { on(event: "message", listener: (req: BridgeRequest) => void): unknown }, sab: SharedArrayBuffer, handler: BridgeHandler): void {
  const ctrl = new Int32Array(sab, 0, HEADER_BYTES / 4);
  const data = new Uint8Array(sab, HEADER_BYTES);
  const encoder = new TextEncoder();
  let closing = false;

  /** Waits until the job thread has taken the previous chunk (it always does, unless it gave up: then we are terminated). */
  const waitEmpty = (): boolean => {
    const deadline = performance.now() + 60_000;
    while (Atomics.load(ctrl, FLAG) !== BRIDGE_EMPTY) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      Atomics.wait(ctrl, FLAG, BRIDGE_CHUNK, Math.min(left, 1_000));
    }
    return true;
  };

  const write = (id: number, answer: BridgeAnswer): void => {
    let bytes: Uint8Array;
    try {
      bytes = encoder.encode(JSON.stringify(answer));
    } catch (e) {
      bytes = encoder.encode(JSON.stringify({ ok: false, error: { name: "TypeError", message: `the answer cannot be sent as JSON: ${e instanceof Error ? e.message : String(e)}` } }));
    }
    const total = bytes.length;
    for (let offset = 0; offset < total; ) {
      if (!waitEmpty()) throw new Error("the job thread stopped taking the answer");
      const length = Math.min(data.length, total - offset);
      data.set(bytes.subarray(offset, offset + length));
      Atomics.store(ctrl, CALL, id);
      Atomics.store(ctrl, TOTAL, total);
      Atomics.store(ctrl, OFFSET, offset);
      Atomics.store(ctrl, LENGTH, length);
      Atomics.store(ctrl, FLAG, BRIDGE_CHUNK);
      Atomics.notify(ctrl, FLAG);
      offset += length;
    }
  };

  const dead = (why: string): void => {
    const bytes = encoder.encode(why.slice(0, 2000));
    const length = Math.min(bytes.length, data.length);
    data.set(bytes.subarray(0, length));
    Atomics.store(ctrl, LENGTH, length);
    Atomics.store(ctrl, FLAG, BRIDGE_DEAD);
    Atomics.notify(ctrl, FLAG);
  };

  process.on("uncaughtException", (e) => {
    dead(`uncaught ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    process.exit(1);
  });
  process.on("unhandledRejection", (e) => {
    dead(`unhandled rejection ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    process.exit(1);
  });
  process.on("exit", (code) => {
    if (!closing && Atomics.load(ctrl, FLAG) !== BRIDGE_DEAD) dead(`the worker thread exited with code ${code}`);
  });

  port.on("message", (req: BridgeRequest) => {
    void (async () => {
      let answer: BridgeAnswer;
      try {
        let value: unknown;
        if (req.method === "$close") {
          closing = true;
          value = await handler.close?.();
        } else {
          const method = Object.hasOwn(handler, req.method) ? handler[req.method] : undefined;
          if (typeof method !== "function") throw new TypeError(`no method "${req.method}"`);
          value = await (method as (params: unknown) => unknown).call(handler, req.params);
        }
        answer = { ok: true, value: value ?? null };
      } catch (e) {
        answer = { ok: false, error: { name: e instanceof Error ? e.name : "Error", message: e instanceof Error ? e.message : String(e) } };
      }
      write(req.id, answer);
    })();
  });
}
