// A running deployment's operations: its live figures (the runner's metrics stream relayed, with
// rates computed here from successive counters), its checkpoints against the pipeline's timeout, and
// a graceful stop. The deployment's runner job id comes from the database, never from the browser.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { pipelineSettingsSchema } from "@keyflow/operators";
import type { PrismaClient } from "@keyflow/db";
import { runnerSnapshotSchema, toLiveMetrics, type LiveMetrics, type RunnerSnapshot } from "../../live/metrics";
import { notFound } from "../errors";
import { JobControlBusyError, jobControls, type JobControlKind, type JobControlRegistry, type JobControlRun } from "../../live/job-controls";
import { getJob, getJobCheckpoints, RunnerError, RunnerJobNotFoundError, RunnerRefusedError, savepointJob, stopJob, stopJobWithSavepoint, streamJobMetrics, withRunnerAuth } from "../runner-client";
import { deployVersion } from "./deployments";
import { branchNodes, branchSkew, jobNodeId, stopRuleBranch } from "./rule-jobs";

async function findDeployment(prisma: PrismaClient, deploymentId: string) {
  const row = await prisma.deployment.findUnique({
    where: { id: deploymentId },
    select: { id: true, status: true, runnerJobId: true, version: { select: { number: true, graph: true } } },
  });
  if (!row) throw notFound("deployment", deploymentId);
  if (!row.runnerJobId) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `deployment ${deploymentId} has no runner job (${row.status})` });
  return { ...row, runnerJobId: row.runnerJobId };
}

function runnerTrouble(error: unknown, deploymentId: string): unknown {
  if (error instanceof RunnerJobNotFoundError) return new TRPCError({ code: "NOT_FOUND", message: `the runner no longer runs deployment ${deploymentId}: ${error.message}`, cause: error });
  if (error instanceof RunnerError) return new TRPCError({ code: "BAD_GATEWAY", message: error.message, cause: error });
  return error;
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

/** How many times in a row the relay reconnects to the runner before giving up. */
const MAX_RECONNECTS = 10;

/**
 * The deployment's live figures, one per runner snapshot (1 Hz), until the subscriber leaves.
 * A dropped runner stream is reconnected. While the deployment should run, a silent runner or a job
 * not back on it yet is waited out (the reconciler brings it back), retrying every 2 s at most;
 * otherwise the stream ends after MAX_RECONNECTS failures, or at once when the runner has no such job.
 */
export async function* liveMetrics(prisma: PrismaClient, runnerUrl: string, deploymentId: string, signal: AbortSignal | undefined): AsyncGenerator<LiveMetrics> {
  const deployment = await findDeployment(prisma, deploymentId);
  let previous: RunnerSnapshot | undefined;
  let failures = 0;
  while (!signal?.aborted) {
    try {
      for await (const raw of streamJobMetrics(runnerUrl, deployment.runnerJobId, signal)) {
        const snap = runnerSnapshotSchema.safeParse(raw);
        if (!snap.success) continue;
        const data = { ...snap.data, nodes: branchNodes(deployment.runnerJobId, deployment.version.number, snap.data.nodes), skew: branchSkew(deployment.runnerJobId, deployment.version.number, snap.data.skew) };
        yield toLiveMetrics(deploymentId, data, previous);
        previous = data;
        failures = 0;
      }
    } catch (error) {
      if (signal?.aborted) return;
      failures++;
      // A new run counts from zero: rates start again from its first snapshot.
      previous = undefined;
      const wanted = (await prisma.deployment.findUnique({ where: { id: deploymentId }, select: { desired: true } }))?.desired === "running";
      if (!wanted && (error instanceof RunnerJobNotFoundError || failures > MAX_RECONNECTS)) throw runnerTrouble(error, deploymentId);
    }
    await sleep(Math.min(2_000, 250 * 2 ** failures), signal);
  }
}

/** The checkpoint history with what a warning needs: the pipeline's interval and timeout. */
export async function deploymentCheckpoints(prisma: PrismaClient, runnerUrl: string, deploymentId: string) {
  const deployment = await findDeployment(prisma, deploymentId);
  const graph = deployment.version.graph as { settings?: unknown } | null;
  const settings = pipelineSettingsSchema.safeParse(graph?.settings ?? {});
  const { checkpointIntervalMs, checkpointTimeoutMs, retainedCheckpoints, parallelism, maxParallelism } = settings.success ? settings.data : pipelineSettingsSchema.parse({});
  // A restore first stops the job with a savepoint, whose final checkpoint drops the oldest kept one.
  const restorableCount = Math.max(1, retainedCheckpoints - 1);
  try {
    const [job, history] = await Promise.all([getJob(runnerUrl, deployment.runnerJobId), getJobCheckpoints(runnerUrl, deployment.runnerJobId)]);
    return {
      deploymentId,
      jobId: deployment.runnerJobId,
      versionNumber: deployment.version.number,
      jobStatus: job.status,
      failure: job.failure ?? null,
      restarts: job.restarts ?? 0,
      checkpointIntervalMs,
      checkpointTimeoutMs,
      /** What the job runs at: a rescale's parallelism, else the version's settings. */
      parallelism: jobControls().parallelism(deploymentId) ?? parallelism,
      maxParallelism,
      /** Newest first. */
      checkpoints: history.checkpoints.map((c, i) => ({
        id: c.id,
        status: c.status ?? "completed",
        triggeredAt: c.triggeredAt,
        durationMs: c.durationMs,
        stateBytes: c.stateBytes,
        ...(c.alignmentMs !== undefined ? { alignmentMs: c.alignmentMs } : {}),
        ...(c.failure !== undefined ? { failure: c.failure } : {}),
        /** Still on the runner's disk when a restore from it starts (see restorableCount). */
        restorable: c.path !== undefined && i < restorableCount,
      })),
    };
  } catch (error) {
    throw runnerTrouble(error, deploymentId);
  }
}

/** A graceful stop (the runner takes a final checkpoint); the deployment is recorded as stopped. */
export async function stopDeployment(prisma: PrismaClient, runnerUrl: string, deploymentId: string) {
  // One branch of a rule job with others running stops alone, at a checkpoint boundary (./rule-jobs.ts).
  const branch = await stopRuleBranch(prisma, runnerUrl, deploymentId);
  if (branch) return branch;
  const deployment = await findDeployment(prisma, deploymentId);
  let job: Awaited<ReturnType<typeof stopJob>> | null = null;
  try {
    job = await stopJob(runnerUrl, deployment.runnerJobId);
  } catch (error) {
    // A job the runner no longer knows is stopped as far as anyone can tell.
    if (!(error instanceof RunnerJobNotFoundError)) throw runnerTrouble(error, deploymentId);
  }
  const updated = await prisma.deployment.update({
    where: { id: deploymentId },
    data: { status: job?.status === "failed" ? "failed" : "stopped", desired: "stopped", stoppedAt: new Date() },
    select: { id: true, status: true, stoppedAt: true },
  });
  return {
    deployment: updated,
    jobStatus: job?.status ?? "gone",
    finalCheckpoint: job?.lastCheckpoint ? { id: job.lastCheckpoint.id, durationMs: job.lastCheckpoint.durationMs, stateBytes: job.lastCheckpoint.stateBytes } : null,
  };
}

// ---- Throttle (an operations / debugging control) --------------------------------------------------

const throttleAnswerSchema = z.object({ jobId: z.string(), throttles: z.record(z.string(), z.number().nullable()) });

/**
 * Sets a records-per-second cap on a sink node of the running deployment, or lifts it (null):
 * POST /jobs/:id/nodes/:node/throttle on the runner, which refuses a node that is not a sink.
 */
export async function throttleSink(prisma: PrismaClient, runnerUrl: string, input: { deploymentId: string; nodeId: string; recordsPerSecond: number | null }) {
  const deployment = await findDeployment(prisma, input.deploymentId);
  const node = await jobNodeId(runnerUrl, deployment.runnerJobId, deployment.version.number, input.nodeId);
  const path = `/jobs/${encodeURIComponent(deployment.runnerJobId)}/nodes/${encodeURIComponent(node)}/throttle`;
  const json = await runnerJson(runnerUrl, path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recordsPerSecond: input.recordsPerSecond }) }, input.deploymentId);
  const parsed = throttleAnswerSchema.safeParse(json);
  if (!parsed.success) throw new TRPCError({ code: "BAD_GATEWAY", message: `unexpected throttle answer from the runner: ${z.prettifyError(parsed.error)}` });
  return { deploymentId: input.deploymentId, nodeId: input.nodeId, recordsPerSecond: parsed.data.throttles[node] ?? null };
}

/** A runner call of the operations panels: 404 → NOT_FOUND, 400 → BAD_REQUEST with the runner's reason, other failures → BAD_GATEWAY. */
async function runnerJson(runnerUrl: string, path: string, init: RequestInit, deploymentId: string): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${runnerUrl}${path}`, withRunnerAuth({ ...init, signal: AbortSignal.timeout(15_000) }));
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new TRPCError({ code: "BAD_GATEWAY", message: `the runner at ${runnerUrl} did not answer (${reason})` });
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new TRPCError({ code: "BAD_GATEWAY", message: `the runner answered ${path} with something other than JSON: ${text.slice(0, 200)}` });
  }
  if (!response.ok) {
    const err = z.object({ error: z.string(), issues: z.array(z.string()).optional() }).safeParse(json);
    const reason = err.success ? [err.data.error, ...(err.data.issues ?? [])].join("; ") : `HTTP ${response.status}`;
    if (response.status === 404) throw new TRPCError({ code: "NOT_FOUND", message: `deployment ${deploymentId}: ${reason}` });
    if (response.status >= 400 && response.status < 500) throw new TRPCError({ code: "BAD_REQUEST", message: reason });
    throw new TRPCError({ code: "BAD_GATEWAY", message: `${path} failed on the runner: ${reason}` });
  }
  return json;
}

// ---- Node drill-down: taps and queryable state -----------------------------------------------------

const tappedSchema = z.object({
  jobId: z.string(),
  nodeId: z.string(),
  records: z.array(z.object({ at: z.number(), value: z.unknown(), timestamp: z.number(), key: z.string().optional() })),
  recordsSeen: z.number(),
  deadLetters: z.array(
    z.object({
      at: z.number(),
      nodeId: z.string(),
      port: z.string().nullable(),
      reason: z.string(),
      raw: z.string().nullable(),
      value: z.unknown(),
      origin: z.looseObject({ partition: z.number().optional(), offset: z.string().optional(), topic: z.string().optional(), path: z.string().optional(), line: z.number().optional() }).nullable(),
    }),
  ),
  deadLettersSeen: z.number(),
});

/** The runner's taps on a node: the last records into it (sinks) and its last dead letters with their reasons. */
export async function nodeTaps(prisma: PrismaClient, runnerUrl: string, input: { deploymentId: string; nodeId: string }) {
  const deployment = await findDeployment(prisma, input.deploymentId);
  const node = await jobNodeId(runnerUrl, deployment.runnerJobId, deployment.version.number, input.nodeId);
  const json = await runnerJson(runnerUrl, `/jobs/${encodeURIComponent(deployment.runnerJobId)}/nodes/${encodeURIComponent(node)}/taps`, {}, input.deploymentId);
  const parsed = tappedSchema.safeParse(json);
  if (!parsed.success) throw new TRPCError({ code: "BAD_GATEWAY", message: `unexpected taps answer from the runner: ${z.prettifyError(parsed.error)}` });
  return parsed.data;
}

/** The runner's queryable state of one key (KeyStateView in packages/operators/src/runtime/queryable.ts). */
const timerSchema = z.object({ time: z.number(), namespace: z.string() });
export const keyStateViewSchema = z.looseObject({
  nodeId: z.string(),
  key: z.string(),
  state: z.array(z.looseObject({ name: z.string(), kind: z.string(), value: z.unknown(), ttlStamp: z.number().optional() })),
  timers: z.object({ eventTime: z.array(timerSchema), processingTime: z.array(timerSchema) }),
  /** Null before the first watermark (the runner sends ±Infinity as null). */
  watermark: z.number().nullable(),
});

/** One key's current state and timers in a node, from the runner's queryable state (GET /jobs/:id/state?node=&key=). */
export async function keyState(prisma: PrismaClient, runnerUrl: string, input: { deploymentId: string; nodeId: string; key: string }) {
  const deployment = await findDeployment(prisma, input.deploymentId);
  const query = new URLSearchParams({ node: await jobNodeId(runnerUrl, deployment.runnerJobId, deployment.version.number, input.nodeId), key: input.key });
  const json = await runnerJson(runnerUrl, `/jobs/${encodeURIComponent(deployment.runnerJobId)}/state?${query.toString()}`, {}, input.deploymentId);
  const parsed = keyStateViewSchema.safeParse(json);
  if (!parsed.success) throw new TRPCError({ code: "BAD_GATEWAY", message: `unexpected state answer from the runner: ${z.prettifyError(parsed.error)}` });
  return { deploymentId: input.deploymentId, nodeId: input.nodeId, key: input.key, state: parsed.data };
}

// ---- Job controls: savepoint, restore, rescale ------------------------------------------------------
// Each runs on the server, step by step, into the job-control registry (the Operations tab polls
// deployment.controls for the steps). Restore and rescale replace the deployment: stop with a
// savepoint, deploy the same version again from the chosen state; if the runner refuses that (state
// that does not fit, a parallelism above maxParallelism), the job goes back to running from the
// savepoint at its old parallelism, and the refusal reaches the caller with the nodes it names.

async function controlTarget(prisma: PrismaClient, deploymentId: string) {
  const row = await prisma.deployment.findUnique({
    where: { id: deploymentId },
    select: { id: true, status: true, runnerJobId: true, pipelineId: true, versionId: true, mode: true, version: { select: { number: true, graph: true } } },
  });
  if (!row) throw notFound("deployment", deploymentId);
  if (row.status !== "running" || !row.runnerJobId) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `deployment ${deploymentId} is ${row.status}; job controls need a running deployment` });
  const graph = row.version.graph as { settings?: unknown } | null;
  const parsed = pipelineSettingsSchema.safeParse(graph?.settings ?? {});
  const settings = parsed.success ? parsed.data : pipelineSettingsSchema.parse({});
  return { ...row, runnerJobId: row.runnerJobId, settings };
}

function startRun(registry: JobControlRegistry, pipelineId: string, kind: JobControlKind, deploymentId: string): JobControlRun {
  try {
    return registry.start(pipelineId, kind, deploymentId);
  } catch (error) {
    if (error instanceof JobControlBusyError) throw new TRPCError({ code: "CONFLICT", message: error.message });
    throw error;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The runner's issues behind an error (deployVersion wraps the runner's refusal in a TRPCError). */
function issuesOf(error: unknown): string[] {
  const cause = error instanceof TRPCError ? error.cause : error;
  return cause instanceof RunnerRefusedError ? [...cause.issues] : [];
}

function controlError(error: unknown, deploymentId: string): unknown {
  if (error instanceof RunnerRefusedError) return new TRPCError({ code: error.status === 409 ? "CONFLICT" : "BAD_REQUEST", message: error.message, cause: error });
  return runnerTrouble(error, deploymentId);
}

/** A savepoint of the running job; the job keeps running. */
export async function savepointDeployment(prisma: PrismaClient, runnerUrl: string, deploymentId: string, registry: JobControlRegistry = jobControls()) {
  const target = await controlTarget(prisma, deploymentId);
  const run = startRun(registry, target.pipelineId, "savepoint", deploymentId);
  try {
    registry.step(run, "taking a savepoint (a checkpoint of every task, kept in its own folder)");
    const path = await savepointJob(runnerUrl, target.runnerJobId);
    run.savepointPath = path;
    registry.succeed(run, `savepoint written: ${path}`);
    return { run: { ...run }, pipelineId: target.pipelineId, path };
  } catch (error) {
    registry.fail(run, messageOf(error), issuesOf(error));
    throw controlError(error, deploymentId);
  }
}

/** `anotherJob`: a savepoint that is not one of the job's own, picked explicitly by an approver. */
export type RestoreSource = { checkpointId: number } | { savepointPath: string; anotherJob?: boolean | undefined };

/**
 * Restore (from a listed checkpoint or a savepoint folder) or rescale (from a savepoint taken now),
 * optionally at another parallelism. Who may do it (the role matrix) and from which savepoint is
 * checked by the caller (routers/deployment.ts, ./operating-roles.ts).
 */
export async function replaceDeployment(
  prisma: PrismaClient,
  runnerUrl: string,
  input: { deploymentId: string; kind: "restore" | "rescale"; from: RestoreSource | null; parallelism?: number | undefined },
  registry: JobControlRegistry = jobControls(),
) {
  const target = await controlTarget(prisma, input.deploymentId);
  const current = registry.parallelism(target.id) ?? target.settings.parallelism;
  const parallelism = input.parallelism ?? current;
  // Refused before the job is touched: the runner would refuse it after the stop.
  if (parallelism > target.settings.maxParallelism) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `parallelism ${parallelism} is above the pipeline's maxParallelism ${target.settings.maxParallelism} (the number of key groups)` });
  }
  if (input.kind === "rescale" && parallelism === current) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `deployment ${target.id} already runs at parallelism ${current}` });
  }
  let chosen: { path: string; label: string } | null = null;
  if (input.from && "checkpointId" in input.from) {
    const id = input.from.checkpointId;
    const history = await getJobCheckpoints(runnerUrl, target.runnerJobId).catch((error: unknown) => {
      throw runnerTrouble(error, target.id);
    });
    const checkpoint = history.checkpoints.find((c) => c.id === id);
    if (!checkpoint?.path) throw new TRPCError({ code: "BAD_REQUEST", message: `checkpoint ${id} is not among the kept checkpoints of deployment ${target.id} (the runner keeps the last ${target.settings.retainedCheckpoints}); pick a newer one` });
    chosen = { path: checkpoint.path, label: `checkpoint ${id}` };
  } else if (input.from) {
    chosen = { path: input.from.savepointPath, label: `savepoint ${input.from.savepointPath}` };
  }

  const run = startRun(registry, target.pipelineId, input.kind, target.id);
  const redeploy = async (restoreFrom: string, at: number) => {
    const deployment = await deployVersion(prisma, runnerUrl, { versionId: target.versionId, mode: target.mode, start: { restoreFrom, parallelism: at } });
    registry.setParallelism(deployment.id, at);
    run.newDeploymentId = deployment.id;
    run.parallelism = at;
    return deployment;
  };

  let savepoint: string;
  try {
    registry.step(run, `stopping deployment ${target.id} with a savepoint${input.kind === "restore" ? " (the way back if the restore is refused)" : ""}`);
    const stopped = await stopJobWithSavepoint(runnerUrl, target.runnerJobId);
    savepoint = stopped.savepointPath;
    run.savepointPath = savepoint;
    await prisma.deployment.update({ where: { id: target.id }, data: { status: "stopped", desired: "stopped", stoppedAt: new Date() } });
    registry.step(run, `savepoint written: ${savepoint}`);
    registry.step(run, `job stopped (deployment ${target.id})`);
  } catch (error) {
    registry.fail(run, messageOf(error), issuesOf(error));
    throw controlError(error, target.id);
  }

  const from = chosen ?? { path: savepoint, label: "the savepoint" };
  try {
    registry.step(run, `deploying v${target.version.number} from ${from.label} at parallelism ${parallelism}`);
    const deployment = await redeploy(from.path, parallelism);
    if (deployment.status !== "running") throw new TRPCError({ code: "BAD_GATEWAY", message: `the runner did not start deployment ${deployment.id} (${deployment.status})` });
    registry.succeed(run, `restored at parallelism ${parallelism} from ${from.label}: deployment ${deployment.id} is running`);
    return { run: { ...run }, pipelineId: target.pipelineId, deployment, savepointPath: savepoint, parallelism };
  } catch (error) {
    const reason = messageOf(error);
    const issues = issuesOf(error);
    registry.step(run, issues.length > 0 ? `refused by the runner: ${issues.length} issue${issues.length === 1 ? "" : "s"} (below)` : "failed (below)");
    try {
      registry.step(run, `going back: deploying from the savepoint at parallelism ${current}`);
      const back = await redeploy(savepoint, current);
      registry.step(run, `running again from the savepoint at parallelism ${current}: deployment ${back.id}`);
    } catch (backError) {
      registry.step(run, `the way back failed too: ${messageOf(backError)}; deploy a version from the History tab`);
    }
    registry.fail(run, reason, issues);
    throw error instanceof TRPCError ? error : controlError(error, target.id);
  }
}

/** The pipeline's recent job controls (newest first) with their steps, for the Operations tab. */
export function recentControls(pipelineId: string, registry: JobControlRegistry = jobControls()): JobControlRun[] {
  return registry.recent(pipelineId);
}
