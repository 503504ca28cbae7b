// A dry run apart from the jobs: in a worker thread with its own heap limit and a wall-clock limit.
// A draft pipeline is untrusted (an analyst's expressions and code on a sample of any size): if its
// run exhausts its heap or its time, only the worker dies and the caller gets an error saying so;
// the runner, its API and its jobs go on.
import { Worker } from "node:worker_threads";
import { DRY_RUN_MAX_HEAP_MB, DRY_RUN_TIMEOUT_MS, formatBytes, type PipelineDocument } from "@keyflow/operators";
import type { Logger } from "../log";
import type { DryRunInput, DryRunOptions, DryRunResult } from "./dry-run";
import type { DryRunReply, DryRunRequestMessage } from "./dry-run-worker";

/**
 * Run from source through tsx, not from a bundle (../exec/worker-bundle.ts): the sandbox of
 * process.custom finds its files beside its modules (import.meta.url), which a bundle moves.
 */
const ENTRY = new URL("./dry-run-entry.mjs", import.meta.url);

export interface IsolatedDryRunOptions extends DryRunOptions {
  /** The worker's old-generation heap, MB (default DRY_RUN_MAX_HEAP_MB). */
  maxHeapMb?: number;
  /** Wall-clock limit of the whole run, worker start included (default DRY_RUN_TIMEOUT_MS). */
  timeoutMs?: number;
  log?: Logger | undefined;
}

/** The dry run's worker died or was stopped: the message says why, for the panel and the API. */
export class DryRunAbortedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DryRunAbortedError";
  }
}

export async function dryRunIsolated(doc: PipelineDocument, inputs: readonly DryRunInput[], opts: IsolatedDryRunOptions = {}): Promise<DryRunResult> {
  const { maxHeapMb = DRY_RUN_MAX_HEAP_MB, timeoutMs = DRY_RUN_TIMEOUT_MS, log, sandbox, ...rest } = opts;
  const { onLog, ...sandboxOpts } = sandbox ?? {};
  const request: DryRunRequestMessage = { doc, inputs: [...inputs], opts: { ...rest, ...(sandbox ? { sandbox: sandboxOpts } : {}) } };
  const worker = new Worker(ENTRY, { resourceLimits: { maxOldGenerationSizeMb: maxHeapMb } });
  return new Promise<DryRunResult>((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
      void worker.terminate();
    };
    const timer = setTimeout(
      () => settle(() => reject(new DryRunAbortedError(`the dry run took longer than ${timeoutMs / 1000} s and was stopped; try a smaller sample`))),
      timeoutMs,
    );
    worker.on("message", (m: DryRunReply) => {
      if (m.kind === "log") onLog?.(m.nodeId, m.line);
      else if (m.kind === "result") settle(() => resolve(m.result));
      else settle(() => reject(new Error(m.message)));
    });
    worker.on("error", (err: Error & { code?: string }) => {
      const message =
        err.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `the dry run ran out of memory (its limit is ${formatBytes(maxHeapMb * 1024 * 1024)}) and was stopped; try a smaller sample or fewer records kept`
          : `the dry run failed: ${err.message}`;
      settle(() => reject(new DryRunAbortedError(message)));
    });
    worker.on("exit", (code) => settle(() => reject(new DryRunAbortedError(`the dry run's worker exited (code ${code}) before answering`))));
    log?.debug(`dry run of "${doc.name}" in a worker (heap ${maxHeapMb} MB, ${timeoutMs / 1000} s)`);
    worker.postMessage(request);
  });
}
