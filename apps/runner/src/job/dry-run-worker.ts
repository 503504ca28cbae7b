// The dry run's worker thread (see dry-run-isolated.ts): runs one dry run and answers with its
// result, its error, or the sandboxes' log lines as they come.
import { parentPort } from "node:worker_threads";
import type { PipelineDocument } from "@keyflow/operators";
import { dryRun, type DryRunInput, type DryRunOptions, type DryRunResult } from "./dry-run";

/** What the runner sends: one dry run. */
export interface DryRunRequestMessage {
  doc: PipelineDocument;
  inputs: DryRunInput[];
  opts: Omit<DryRunOptions, "sandbox"> & { sandbox?: Omit<NonNullable<DryRunOptions["sandbox"]>, "onLog"> };
}
/** What the worker answers. */
export type DryRunReply = { kind: "log"; nodeId: string; line: string } | { kind: "result"; result: DryRunResult } | { kind: "error"; message: string };

const port = parentPort;
if (port === null) throw new Error("dry-run-worker runs in a worker thread");

port.once("message", (m: DryRunRequestMessage) => {
  const opts: DryRunOptions = { ...m.opts, sandbox: { ...m.opts.sandbox, onLog: (nodeId, line) => port.postMessage({ kind: "log", nodeId, line } satisfies DryRunReply) } };
  dryRun(m.doc, m.inputs, opts).then(
    (result) => port.postMessage({ kind: "result", result } satisfies DryRunReply),
    (err: unknown) => port.postMessage({ kind: "error", message: err instanceof Error ? err.message : String(err) } satisfies DryRunReply),
  );
});
