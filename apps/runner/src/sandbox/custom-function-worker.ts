// The bridge worker's side of process.custom (loaded by ./sync-bridge-worker.mjs): holds the job's
// sandboxed functions (one sandbox process each, ./sandbox.ts) and runs their calls. Everything it
// answers is JSON; a SandboxError is answered as data (`ok: false`), never thrown, so that the job
// thread can tell the user's failures from the bridge's own.
import { isSandboxError } from "./errors";
import { createSandboxedProcessFunction, type SandboxOptions, type SandboxedProcessFunction } from "./sandbox";
import type { Effects, OnTimerInput, ProcessElementInput } from "./types";
import type { SandboxErrorKind } from "./errors";

export interface SerializedSandboxError {
  kind: SandboxErrorKind;
  message: string;
  line?: number;
  column?: number;
  /** For `exception`: what the call did before it threw. */
  partialEffects?: Effects;
}

export interface OpenParams {
  id: number;
  code: string;
  options: SandboxOptions;
}
export type OpenAnswer = { ok: true; hasOnTimer: boolean } | { ok: false; error: SerializedSandboxError };

export type CallParams = { id: number; kind: "element"; input: ProcessElementInput } | { id: number; kind: "timer"; input: OnTimerInput };
export type CallAnswer = { ok: true; effects: Effects } | { ok: false; error: SerializedSandboxError };

function serialize(e: unknown): SerializedSandboxError {
  if (isSandboxError(e)) {
    return {
      kind: e.kind,
      message: e.message,
      ...(e.line === undefined ? {} : { line: e.line }),
      ...(e.column === undefined ? {} : { column: e.column }),
      ...(e.partialEffects === undefined ? {} : { partialEffects: e.partialEffects }),
    };
  }
  return { kind: "crash", message: `process.custom: the sandbox failed: ${e instanceof Error ? e.message : String(e)}` };
}

export function createBridgeHandler() {
  const functions = new Map<number, SandboxedProcessFunction>();

  return {
    /** Compiles the code and starts its sandbox process, so that broken code is reported at job start. */
    async open({ id, code, options }: OpenParams): Promise<OpenAnswer> {
      let fn: SandboxedProcessFunction | undefined;
      try {
        fn = createSandboxedProcessFunction(code, options);
        const { hasOnTimer } = await fn.ready();
        functions.get(id)?.close().catch(() => undefined);
        functions.set(id, fn);
        return { ok: true, hasOnTimer };
      } catch (e) {
        await fn?.close().catch(() => undefined);
        return { ok: false, error: serialize(e) };
      }
    },

    async call(p: CallParams): Promise<CallAnswer> {
      const fn = functions.get(p.id);
      if (fn === undefined) return { ok: false, error: { kind: "closed", message: `process.custom: no sandboxed function ${p.id} (closed)` } };
      try {
        const effects = p.kind === "element" ? await fn.processElement(p.input) : await fn.onTimer(p.input);
        return { ok: true, effects };
      } catch (e) {
        return { ok: false, error: serialize(e) };
      }
    },

    /** The sandbox process's pid (tests). */
    pid({ id }: { id: number }): number | null {
      return functions.get(id)?.pid ?? null;
    },

    async close(): Promise<void> {
      const all = [...functions.values()];
      functions.clear();
      await Promise.all(all.map((fn) => fn.close().catch(() => undefined)));
    },
  };
}
