// Records what happens to deployed jobs in Postgres (when DATABASE_URL is set): the deployment's
// status and failure reason, and one `checkpoints` row per completed checkpoint and per failed or
// aborted one (status `failed`, its reason in failure_reason). The web app reads
// them. Writes are queued per job in order, and a failed write is logged, never fatal: the job's
// truth is its checkpoint folder, Postgres only describes it. Jobs whose id is not a deployment in
// the database (e.g. `keyflow serve --deploy file.json`) are skipped after the first miss.
import type { PrismaClient } from "@keyflow/db";
import type { CheckpointStats } from "../job/driver";
import type { FailedCheckpoint } from "../exec/parallel";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import type { JobEvents, ManagedJob, ManagedStatus } from "./jobs";

type DeploymentStatus = "pending" | "running" | "stopped" | "failed" | "finished";

/** How a job's status shows on its deployment; undefined: no change. */
export function deploymentStatusOf(status: ManagedStatus): DeploymentStatus | undefined {
  switch (status) {
    case "running":
      return "running";
    case "restarting":
    case "failed":
      return "failed";
    case "stopped":
      return "stopped";
    // A bounded job that read its sources to the end (a backtest): not the same as stopped by someone.
    case "finished":
      return "finished";
    case "starting":
    case "stopping":
      return undefined;
  }
}

export class PostgresJobReporter implements JobEvents {
  private readonly queues = new Map<string, Promise<void>>();
  private readonly unknown = new Set<string>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly log: Logger,
  ) {}

  status(job: ManagedJob, status: ManagedStatus): void {
    const next = deploymentStatusOf(status);
    if (!next) return;
    if (job.routing) {
      // A rule job (../job/rule-job.ts): its id names no deployment, its live branches' rows do. Only
      // its end is theirs: a restart is recovery, and a stop is the web app's (it restarts the job
      // with one more branch through a savepoint and keeps the rows).
      if (status !== "failed" && status !== "finished") return;
      const data = { status: next, stoppedAt: new Date(), ...(status === "failed" ? { failureReason: job.failure ?? null } : {}) };
      this.enqueue(job.deploymentId, async () => {
        await this.prisma.deployment.updateMany({ where: { runnerJobId: job.deploymentId, status: { in: ["pending", "running"] } }, data });
      });
      return;
    }
    const failureReason = next === "failed" ? (job.failure ?? null) : undefined;
    const ended = next === "stopped" || next === "finished";
    const stoppedAt = ended ? new Date() : undefined;
    // The counts of the run that ended (per node: records in and out, dead letters): a backtest's result.
    const finalMetrics = ended ? finalMetricsOf(job) : undefined;
    this.enqueue(job.deploymentId, async () => {
      await this.prisma.deployment.update({
        where: { id: job.deploymentId },
        data: { status: next, ...(failureReason !== undefined ? { failureReason } : {}), ...(stoppedAt ? { stoppedAt } : {}), ...(finalMetrics ? { finalMetrics } : {}) },
      });
    });
  }

  checkpoint(job: ManagedJob, stats: CheckpointStats): void {
    // A rule job's checkpoints belong to no one deployment row (the runner lists them: GET /jobs/:id/checkpoints).
    if (job.routing) return;
    this.enqueue(job.deploymentId, async () => {
      const row = {
        status: "completed" as const,
        triggeredAt: new Date(stats.triggeredAt),
        durationMs: Math.round(stats.durationMs),
        sizeBytes: BigInt(stats.stateBytes),
        incrementalSizeBytes: stats.incrementalBytes !== undefined ? BigInt(stats.incrementalBytes) : null,
        alignmentMs: Math.round(stats.alignmentMs),
        acks: { tasks: stats.acks.map((a) => ({ ...a })) },
        path: stats.path ?? null,
        failureReason: null,
      };
      await this.prisma.checkpoint.upsert({
        where: { deploymentId_checkpointId: { deploymentId: job.deploymentId, checkpointId: stats.id } },
        create: { deploymentId: job.deploymentId, checkpointId: stats.id, ...row },
        update: row,
      });
    });
  }

  checkpointFailed(job: ManagedJob, failed: FailedCheckpoint): void {
    if (job.routing) return;
    this.enqueue(job.deploymentId, async () => {
      const where = { deploymentId_checkpointId: { deploymentId: job.deploymentId, checkpointId: failed.id } };
      // A completed row for this id (a later run may reuse the id of a checkpoint that was never
      // written) is never turned into a failed one.
      const existing = await this.prisma.checkpoint.findUnique({ where, select: { status: true } });
      if (existing?.status === "completed") return;
      const row = {
        status: "failed" as const,
        triggeredAt: new Date(failed.triggeredAt),
        durationMs: Math.max(0, Math.round(failed.failedAt - failed.triggeredAt)),
        failureReason: failed.reason,
      };
      await this.prisma.checkpoint.upsert({ where, create: { deploymentId: job.deploymentId, checkpointId: failed.id, ...row }, update: row });
    });
  }

  /** Resolves when every queued write has been tried. */
  async flush(): Promise<void> {
    await Promise.all(this.queues.values());
  }

  private enqueue(deploymentId: string, write: () => Promise<void>): void {
    if (this.unknown.has(deploymentId)) return;
    const before = this.queues.get(deploymentId) ?? Promise.resolve();
    const next = before.then(write).catch((err: unknown) => {
      if (isRecordMissing(err)) {
        this.unknown.add(deploymentId);
        this.log.info(`job "${deploymentId}" is not a deployment in the database; its status is not recorded there`);
      } else {
        this.log.warn(`recording job "${deploymentId}" in Postgres failed: ${errorMessage(err)}`);
      }
    });
    this.queues.set(deploymentId, next);
  }
}

/** What a finished or stopped job had done in its last run, per node. */
export function finalMetricsOf(job: Pick<ManagedJob, "metrics" | "restarts" | "doc">): { restarts: number; nodes: Record<string, { type: string; recordsIn: number; recordsOut: number; deadLetters: number }> } {
  const types = new Map(job.doc.nodes.map((n) => [n.id, n.type]));
  const nodes: Record<string, { type: string; recordsIn: number; recordsOut: number; deadLetters: number }> = {};
  for (const [id, m] of Object.entries(job.metrics())) nodes[id] = { type: types.get(id) ?? "?", recordsIn: m.recordsIn, recordsOut: m.recordsOut, deadLetters: m.deadLetters };
  return { restarts: job.restarts, nodes };
}

/** Prisma's "record to update not found" (P2025) and a foreign key miss (P2003). */
function isRecordMissing(err: unknown): boolean {
  return typeof err === "object" && err !== null && "code" in err && (err.code === "P2025" || err.code === "P2003");
}
