// Assembles a JobDriver from a validated pipeline: its connectors, its checkpoint store and clock.
// The CLI and the service both start jobs through here.
import type { JsonValue, PipelineDocument } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import { createConnectors } from "../io/connectors";
import type { Logger } from "../log";
import { DirectoryCheckpointStore, TransientCheckpointStore } from "./checkpoints";
import { systemClock, type Clock } from "./clock";
import { JobDriver, type CheckpointStats, type Connectors, type JobStatus } from "./driver";
import { createCustomFunctionFactory } from "../sandbox/custom-function-factory";
import type { ExchangeOptions, FailedCheckpoint } from "../exec/parallel";
import type { JobOps } from "../ops/job-ops";

export interface CreateJobOptions {
  doc: PipelineDocument;
  /** Stable across restarts: names checkpoints, consumer groups and transactional ids. */
  jobId: string;
  baseDir: string;
  /** The folder file paths must stay in (`keyflow run --allow-paths`); default baseDir. */
  fileRoot?: string;
  env: RunnerEnv;
  log: Logger;
  /** Durable checkpoints here (resumed from when present); undefined: checkpoints only commit sinks. */
  checkpointDir?: string;
  clock?: Clock;
  checkpointIntervalMs?: number;
  demoLimit?: number;
  onCheckpoint?: (stats: CheckpointStats, sources: Record<string, JsonValue>) => void;
  onCheckpointFailed?: (failed: FailedCheckpoint) => void;
  onStatus?: (status: JobStatus) => void;
  /** Network buffers of parallel jobs (tests; defaults otherwise). */
  exchange?: ExchangeOptions;
  /** Start from this checkpoint or savepoint folder (see JobDriverOptions.restoreFrom). */
  restoreFrom?: string;
  allowNonRestoredState?: boolean;
  /** Live operations (sink throttles and times): wraps the job's sinks. */
  ops?: JobOps;
  /** Replaces connectors before live operations wrap them (a rule job's routed sinks, ./routing.ts). */
  wrapConnectors?: (plain: Connectors) => Connectors;
}

export function createJobDriver(o: CreateJobOptions): JobDriver {
  const clock = o.clock ?? systemClock;
  const checkpoints = o.checkpointDir ? new DirectoryCheckpointStore(o.checkpointDir, o.doc.settings.retainedCheckpoints, { log: o.log }) : new TransientCheckpointStore();
  const plain = createConnectors({
    doc: o.doc,
    jobId: o.jobId,
    baseDir: o.baseDir,
    ...(o.fileRoot !== undefined ? { fileRoot: o.fileRoot } : {}),
    env: o.env,
    clock,
    log: o.log,
    ...(o.demoLimit !== undefined ? { demoLimit: o.demoLimit } : {}),
  });
  const routed = o.wrapConnectors ? o.wrapConnectors(plain) : plain;
  const connectors = o.ops ? o.ops.wrapConnectors(routed) : routed;
  // process.custom's sandboxes: started when the job creates such a node, closed when it ends.
  const sandboxes = createCustomFunctionFactory({
    ...(o.env.sandboxTimeoutMs !== undefined ? { timeoutMs: o.env.sandboxTimeoutMs } : {}),
    ...(o.env.sandboxMemoryLimitMb !== undefined ? { memoryLimitMb: o.env.sandboxMemoryLimitMb } : {}),
    onLog: (nodeId, line) => o.log.debug(`node "${nodeId}": ${line}`),
  });
  const onStatus = (status: JobStatus) => {
    if (status === "finished" || status === "stopped" || status === "failed") {
      sandboxes.close().catch((err: unknown) => o.log.warn(`closing process.custom's sandboxes: ${err instanceof Error ? err.message : String(err)}`));
    }
    o.onStatus?.(status);
  };
  return new JobDriver({
    jobId: o.jobId,
    doc: o.doc,
    connectors,
    checkpoints,
    clock,
    log: o.log,
    ...(o.checkpointIntervalMs !== undefined ? { checkpointIntervalMs: o.checkpointIntervalMs } : {}),
    ...(o.onCheckpoint ? { onCheckpoint: o.onCheckpoint } : {}),
    ...(o.onCheckpointFailed ? { onCheckpointFailed: o.onCheckpointFailed } : {}),
    ...(o.restoreFrom !== undefined ? { restoreFrom: o.restoreFrom } : {}),
    ...(o.allowNonRestoredState ? { allowNonRestoredState: true } : {}),
    onStatus,
    ...(o.exchange ? { exchange: o.exchange } : {}),
    operatorServices: { customFunctionFactory: sandboxes.factory },
  });
}
