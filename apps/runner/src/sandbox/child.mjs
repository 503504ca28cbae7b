// @ts-check
// The sandbox process: forked by ./sandbox.ts, one per sandboxed function, with an empty
// environment and (by default) Node's permission model allowing it to read only this folder's
// two .mjs files and isolated-vm, with no child processes, workers or file writes. It holds one
// isolated-vm Isolate with a memory limit, runs the prelude then the user's module in it, and
// answers one call at a time: JSON text in, JSON text out. Plain JavaScript (no loader) so that
// it starts fast and needs nothing but node and isolated-vm.
//
// argv: [isolated-vm's entry file]. Messages: see ToChild / FromChild in ./types.ts.
import { createRequire } from "node:module";
import { keyflowPrelude } from "./prelude.mjs";

/** @typedef {import("./types.ts").ChildConfig} ChildConfig */
/** @typedef {import("./types.ts").ChildError} ChildError */
/** @typedef {import("./types.ts").FromChild} FromChild */

const USER_SCRIPT_NAME = "process.custom.js";
const PRELUDE_SOURCE = `(${keyflowPrelude.toString()})()`;

const ivmEntry = process.argv[2];
if (!ivmEntry) throw new Error("child.mjs: isolated-vm's path is missing");
/** @type {typeof import("isolated-vm")} */
const ivm = createRequire(import.meta.url)(ivmEntry);

/** @type {ChildConfig | undefined} */
let config;
/** @type {import("isolated-vm").Isolate | undefined} */
let isolate;
/** @type {import("isolated-vm").Reference<Function> | undefined} */
let dispatch;
/** An init failure is final for this process: the code is the same every time. */
/** @type {ChildError | undefined} */
let initFailure;

/** @param {FromChild} msg */
function send(msg) {
  if (process.send) process.send(msg);
}

function disposeIsolate() {
  dispatch = undefined;
  if (isolate && !isolate.isDisposed) {
    try {
      isolate.dispose();
    } catch {
      // Already going away.
    }
  }
  isolate = undefined;
}

/**
 * Turns what isolated-vm threw out of a run into a ChildError. The prelude catches everything the
 * user's code throws, so what arrives here is isolated-vm's own: a timeout, the memory limit, or a
 * compile error of the user's script.
 * @param {unknown} e
 * @param {"init" | "internal"} otherwise
 * @returns {ChildError}
 */
function classify(e, otherwise) {
  const message = e instanceof Error ? e.message : String(e);
  const disposed = isolate === undefined || isolate.isDisposed;
  if (/memory limit/i.test(message) || (disposed && /disposed/i.test(message))) {
    return { kind: "memory", message };
  }
  if (/timed out/i.test(message)) return { kind: "timeout", message };
  const name = e instanceof Error ? e.name : "Error";
  const stack = e instanceof Error && typeof e.stack === "string" ? e.stack : undefined;
  return stack === undefined ? { kind: otherwise, name, message } : { kind: otherwise, name, message, stack };
}

/** Creates the isolate and loads the code; returns whether onTimer is exported. */
function boot() {
  if (!config) throw new Error("child.mjs: call before init");
  disposeIsolate();
  const iso = new ivm.Isolate({ memoryLimit: config.memoryLimitMb });
  isolate = iso;
  const context = iso.createContextSync();
  const prelude = iso.compileScriptSync(PRELUDE_SOURCE, { filename: "keyflow-prelude.js" });
  /** @type {import("isolated-vm").Reference<Function>} */
  const dispatchRef = prelude.runSync(context, { reference: true, timeout: 2000 });
  prelude.release();
  // The wrapper sits on a line of its own: lineOffset -1 keeps the transpiled line numbers.
  /** @type {import("isolated-vm").Script} */
  let user;
  try {
    user = iso.compileScriptSync(`(function (exports, require, module) {\n${config.js}\n})`, { filename: USER_SCRIPT_NAME, lineOffset: -1 });
  } catch (e) {
    if (iso.isDisposed) throw e;
    const message = e instanceof Error ? e.message : String(e);
    const name = e instanceof Error ? e.name : "SyntaxError";
    throw Object.assign(new Error(message), { childError: { kind: "init", name, message, compile: true } });
  }
  /** @type {import("isolated-vm").Reference<Function>} */
  const moduleFn = user.runSync(context, { reference: true, timeout: 2000 });
  user.release();
  const raw = dispatchRef.applySync(undefined, ["init", JSON.stringify(config.sidePorts), moduleFn.derefInto()], { timeout: config.initTimeoutMs });
  moduleFn.release();
  /** @type {unknown} */
  let answer;
  try {
    answer = typeof raw === "string" ? JSON.parse(raw) : undefined;
  } catch {
    answer = undefined;
  }
  if (typeof answer !== "object" || answer === null || !("ok" in answer)) {
    throw Object.assign(new Error("the code's module returned no valid answer when loaded"), { sandboxKind: "init" });
  }
  if (answer.ok !== true) {
    const err = "error" in answer && typeof answer.error === "object" && answer.error !== null ? answer.error : {};
    /** @type {ChildError} */
    const failure = {
      kind: "init",
      name: "name" in err && typeof err.name === "string" ? err.name : "Error",
      message: "message" in err && typeof err.message === "string" ? err.message : "the code failed while loading",
    };
    if ("stack" in err && typeof err.stack === "string") failure.stack = err.stack;
    throw Object.assign(new Error(failure.message), { childError: failure });
  }
  dispatch = dispatchRef;
  return "hasOnTimer" in answer && answer.hasOnTimer === true;
}

/** Boots, or returns the final init failure. @returns {{ ok: true, hasOnTimer: boolean } | { ok: false, error: ChildError }} */
function ensureBooted() {
  if (initFailure) return { ok: false, error: initFailure };
  try {
    return { ok: true, hasOnTimer: boot() };
  } catch (e) {
    const own = typeof e === "object" && e !== null && "childError" in e ? /** @type {{ childError: ChildError }} */ (e).childError : undefined;
    const failure = own ?? classify(e, "init");
    // A timeout or the memory limit while loading is as final as an exception: same code, same result.
    initFailure = failure;
    disposeIsolate();
    return { ok: false, error: initFailure };
  }
}

/** @param {number} id @param {"element" | "timer"} kind @param {string} input */
function call(id, kind, input) {
  if (!config) return;
  if (!dispatch || !isolate || isolate.isDisposed) {
    const booted = ensureBooted();
    if (!booted.ok) {
      send({ t: "failure", id, error: booted.error });
      return;
    }
  }
  // The budget is CPU time, so that a loaded machine does not fail a call that fits; isolated-vm's
  // own timeout is wall-clock (laverdet/isolated-vm#108) and serves as the backstop that stops an
  // endless loop. The process's CPU time measures the call: applySync blocks this process's only
  // JavaScript thread, and the process does nothing else (isolated-vm's cpuTime followed the wall
  // clock on this VM, descheduled time included). V8's background threads (concurrent GC, compilers)
  // count in the process's CPU time too, while the call's own thread cannot use more than the
  // wall-clock time: the smaller of the two.
  const iso = /** @type {import("isolated-vm").Isolate} */ (isolate);
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const spent = () => {
    const used = process.cpuUsage(cpuBefore);
    return { cpuMs: Math.round(Math.min((used.user + used.system) / 1000, performance.now() - wallBefore)) };
  };
  try {
    const ref = /** @type {import("isolated-vm").Reference<Function>} */ (dispatch);
    const raw = ref.applySync(undefined, [kind, input], { timeout: config.wallTimeoutMs });
    const { cpuMs } = spent();
    if (cpuMs > config.timeoutMs) {
      // Finished, but over its budget: refused like a stopped call, from a fresh isolate next time
      // (its module-level variables may carry what this call did).
      send({ t: "failure", id, error: { kind: "timeout", message: "over its CPU budget", cpuMs } });
      disposeIsolate();
    } else if (typeof raw !== "string") {
      send({ t: "failure", id, error: { kind: "invalid-output", message: "the call returned no JSON text" } });
    } else if (raw.length > config.maxEffectsBytes) {
      send({
        t: "failure",
        id,
        error: { kind: "invalid-output", message: `the call's effects are ${raw.length} characters of JSON, over the limit of ${config.maxEffectsBytes}` },
      });
    } else {
      send({ t: "result", id, raw });
    }
  } catch (e) {
    const failure = classify(e, "internal");
    if (failure.kind === "timeout" && !iso.isDisposed) Object.assign(failure, spent());
    send({ t: "failure", id, error: failure });
    // After a timeout the user's globals may be half-updated; after the memory limit the isolate is
    // gone. Either way the next call gets a fresh isolate (and reloads the module).
    disposeIsolate();
  }
}

process.on("message", (/** @type {import("./types.ts").ToChild} */ msg) => {
  if (msg.t === "init") {
    config = msg.config;
    const booted = ensureBooted();
    send(booted.ok ? { t: "ready", hasOnTimer: booted.hasOnTimer } : { t: "init-error", error: booted.error });
  } else if (msg.t === "call") {
    call(msg.id, msg.kind, msg.input);
  }
});
// The runner went away: so does the sandbox.
process.on("disconnect", () => process.exit(0));
