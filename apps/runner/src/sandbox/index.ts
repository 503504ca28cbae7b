// process.custom's sandbox: runs an analyst's TypeScript keyed process function without letting
// it reach the runner.
//
// THREAT MODEL
//
// Adversary: whoever can save a pipeline, i.e. write `process.custom` code. Assume the code is
// hostile (it was pasted from somewhere, or an account was taken over) or merely broken (an endless
// loop, a memory bomb, a stack overflow, exceptions, a Promise it never awaits).
//
// Assets: the runner process and its secrets (environment: DATABASE_URL, Kafka credentials; files;
// the network; other jobs' records and state), its availability (no hang, no crash, no restart
// loop), and the determinism of the job (a replay after a failure must give the same output).
//
// Walls, from the inside out:
//  1. A V8 isolate (isolated-vm), not `node:vm`. `node:vm` shares one heap and one set of host
//     objects with Node, which is why `this.constructor.constructor("return process")()`,
//     `Error.prepareStackTrace` frames and Promise species/`then` hijacks escape it. An isolate
//     has its own heap and its own intrinsics, and here it holds NO host object at all: no
//     ivm.Reference, Callback or ExternalCopy is ever put in it. The context the user's code sees
//     (ctx.state, ctx.timers, ctx.output…) is built inside the isolate by ./prelude.mjs over data
//     copied in as JSON text; one call returns one batch of effects as JSON text. So there is no
//     host function to call back into, no host prototype to climb, and nothing for a hijacked
//     Promise to be handed. The realm has no require/import (TypeScript imports become calls to a
//     `require` that always throws; dynamic `import()` is rejected by isolated-vm), no process,
//     Buffer, timers, fetch, fs or environment; SharedArrayBuffer, Atomics, WebAssembly, WeakRef and
//     FinalizationRegistry are removed; Date.now(), new Date(), Math.random() and clockless
//     Intl formatting throw (time only comes from ctx), so a replay is deterministic.
//  2. Limits: isolated-vm's memoryLimit (MB, default 64) and a per-call CPU budget (ms, default 50,
//     covering microtasks too; measured on the isolate thread's CPU clock, with a wall-clock
//     backstop of 4 × budget + 1 s that stops an endless loop); a timeout or the memory limit fails that call with a typed error
//     and the next call gets a fresh isolate. Module-level variables therefore do not survive a
//     failure (or a restart, or a rescale): keep what matters in ctx.state.
//  3. A separate process per sandboxed function (child_process.fork of ./child.mjs), not a worker
//     thread: a V8 fatal OOM, an abort in native code or an isolated-vm bug kills only that
//     process; the runner keeps a wall-clock deadline per call (timeout + killGraceMs) and
//     SIGKILLs a process that does not answer, then starts a new one for the next call. The
//     process gets an empty environment (only TZ=UTC: no secrets to read even after an escape)
//     and runs under Node's permission model: it may read only the sandbox's two .mjs files and
//     isolated-vm's folder, and may not write files, spawn processes or start workers.
//  4. Everything coming back is untrusted input: the user's code shares a realm with the prelude
//     and can make it report anything, so ./validate.ts checks each field (JSON only, finite
//     times, declared side ports, a size cap) and reports anything else as `invalid-output`.
//
// Out of scope / limits: the permission model of Node 20 does not restrict the network (a native
// exploit of V8 or isolated-vm would get the process's network and CPU; run the runner in a
// container without egress, under a seccomp profile, as a non-root user). CPU time is bounded per
// call, not per second: a function that takes 49 ms on every record slows its job (back-pressure),
// it does not break it; the budget is CPU time, so a loaded machine does not fail a call that fits
// unless it gets under a fifth of a core for the whole backstop (that failure says so). A function that crashes its process on every record costs a
// process start (≈ 250 ms) per record. isolated-vm's memoryLimit is approximate (V8 may exceed it a
// little before it notices; large ArrayBuffers count; some heap shapes make V8 abort the whole
// process instead, which is what wall 3 is for). The whole state of the key is copied in for every
// call (the user's API is synchronous and never calls back into the host), so keep per-key state
// small; Effects.touched tells the host which names the code uses, so it need not send others. One
// call is one IPC round trip: ≈ 10 k calls per second per sandbox.
//
// Usage:
//   const fn = createSandboxedProcessFunction(code, { memoryLimitMb: 64, timeoutMs: 50 }); // throws SandboxError("syntax")
//   const effects = await fn.processElement({ key, record, timestamp, watermark, state });
//   // apply effects.state / timers / outputs / sideOutputs; on SandboxError route the record to `errors`
//   await fn.close();
//
// The engine calls process.custom synchronously: ./custom-function-factory.ts is its
// CustomFunctionFactory over this sandbox, through ./sync-bridge.ts (the job thread blocks on
// Atomics.wait while a worker thread makes the asynchronous call). Every job gets one
// (../job/create.ts passes it in LocalJobOptions.operatorServices and closes it when the job ends).
export { createCustomFunctionFactory, type CustomFunctionFactoryOptions, type SandboxedFunctions, type SandboxedFunctionStats } from "./custom-function-factory";
export { BridgeError, SyncBridge, type BridgeErrorKind, type SyncBridgeOptions } from "./sync-bridge";
export { SandboxError, isSandboxError, type SandboxErrorKind, type SandboxErrorDetails } from "./errors";
export { createSandboxedProcessFunction, type SandboxOptions, type SandboxedProcessFunction } from "./sandbox";
export { transpileUserCode, USER_SOURCE_NAME, type SyntaxDiagnostic } from "./transpile";
export type {
  Effects,
  Emitted,
  OnTimerInput,
  ProcessElementInput,
  SideEmitted,
  StateCell,
  StateKind,
  StateSnapshot,
  StateTouch,
  StateUpdate,
  TimerUpdate,
} from "./types";
export { emptyEffects } from "./types";
