// Assembles a JobDriver from a validated pipeline: its connectors, its checkpoint store and clock.
// The CLI and the service both start jobs through here.
import type { PipelineDocument } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import { createConnectors } from "../io/connectors";
import type { Logger } from "../log";
import { DirectoryCheckpointStore, TransientCheckpointStore } from "./checkpoints";
import { systemClock, type Clock } from "./clock";
import { JobDriver, type CheckpointStats, type JobStatus } from "./driver";

export interface CreateJobOptions {
  doc: PipelineDocument;
  /** Stable across restarts: names checkpoints, consumer groups and transactional ids. */
  jobId: string;
  baseDir: string;
  env: RunnerEnv;
  log: Logger;
  /** Durable checkpoints here (resumed from when present); undefined: checkpoints only commit sinks. */
  checkpointDir?: string;
  clock?: Clock;
  checkpointIntervalMs?: number;
  demoLimit?: number;
  onCheckpoint?: (stats: CheckpointStats) => void;
  onStatus?: (status: JobStatus) => void;
}

export function createJobDriver(o: CreateJobOptions): JobDriver {
  const clock = o.clock ?? systemClock;
  const checkpoints = o.checkpointDir ? new DirectoryCheckpointStore(o.checkpointDir, o.doc.settings.retainedCheckpoints) : new TransientCheckpointStore();
  const connectors = createConnectors({
    doc: o.doc,
    jobId: o.jobId,
    baseDir: o.baseDir,
    env: o.env,
    clock,
    log: o.log,
    ...(o.demoLimit !== undefined ? { demoLimit: o.demoLimit } : {}),
  });
  return new JobDriver({
    jobId: o.jobId,
    doc: o.doc,
    connectors,
    checkpoints,
    clock,
    log: o.log,
    ...(o.checkpointIntervalMs !== undefined ? { checkpointIntervalMs: o.checkpointIntervalMs } : {}),
    ...(o.onCheckpoint ? { onCheckpoint: o.onCheckpoint } : {}),
    ...(o.onStatus ? { onStatus: o.onStatus } : {}),
  });
}
