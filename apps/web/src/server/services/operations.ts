// A running deployment's operations: its live figures (the runner's metrics stream relayed, with
// rates computed here from successive counters), its checkpoints against the pipeline's timeout, and
// a graceful stop. The deployment's runner job id comes from the database, never from the browser.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { pipelineSettingsSchema } from "@keyflow/operators";
import type { PrismaClient } from "@keyflow/db";
import { runnerSnapshotSchema, toLiveMetrics, type LiveMetrics, type RunnerSnapshot } from "../../live/metrics";
import { notFound } from "../errors";
import { getJob, getJobCheckpoints, RunnerError, RunnerJobNotFoundError, stopJob, streamJobMetrics } from "../runner-client";

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
 * A dropped runner stream is reconnected (the rates continue from the last snapshot seen).
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
        yield toLiveMetrics(deploymentId, snap.data, previous);
        previous = snap.data;
        failures = 0;
      }
    } catch (error) {
      if (signal?.aborted) return;
      if (error instanceof RunnerJobNotFoundError || ++failures > MAX_RECONNECTS) throw runnerTrouble(error, deploymentId);
    }
    await sleep(Math.min(10_000, 500 * 2 ** failures), signal);
  }
}

/** The checkpoint history with what a warning needs: the pipeline's interval and timeout. */
export async function deploymentCheckpoints(prisma: PrismaClient, runnerUrl: string, deploymentId: string) {
  const deployment = await findDeployment(prisma, deploymentId);
  const graph = deployment.version.graph as { settings?: unknown } | null;
  const settings = pipelineSettingsSchema.safeParse(graph?.settings ?? {});
  const { checkpointIntervalMs, checkpointTimeoutMs } = settings.success ? settings.data : pipelineSettingsSchema.parse({});
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
      /** Newest first. */
      checkpoints: history.checkpoints.map((c) => ({
        id: c.id,
        status: c.status ?? "completed",
        triggeredAt: c.triggeredAt,
        durationMs: c.durationMs,
        stateBytes: c.stateBytes,
        ...(c.alignmentMs !== undefined ? { alignmentMs: c.alignmentMs } : {}),
        ...(c.failure !== undefined ? { failure: c.failure } : {}),
      })),
    };
  } catch (error) {
    throw runnerTrouble(error, deploymentId);
  }
}

/** A graceful stop (the runner takes a final checkpoint); the deployment is recorded as stopped. */
export async function stopDeployment(prisma: PrismaClient, runnerUrl: string, deploymentId: string) {
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
    data: { status: job?.status === "failed" ? "failed" : "stopped", stoppedAt: new Date() },
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
  const path = `/jobs/${encodeURIComponent(deployment.runnerJobId)}/nodes/${encodeURIComponent(input.nodeId)}/throttle`;
  const json = await runnerJson(runnerUrl, path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ recordsPerSecond: input.recordsPerSecond }) }, input.deploymentId);
  const parsed = throttleAnswerSchema.safeParse(json);
  if (!parsed.success) throw new TRPCError({ code: "BAD_GATEWAY", message: `unexpected throttle answer from the runner: ${z.prettifyError(parsed.error)}` });
  return { deploymentId: input.deploymentId, nodeId: input.nodeId, recordsPerSecond: parsed.data.throttles[input.nodeId] ?? null };
}

/** A runner call of the operations panels: 404 → NOT_FOUND, 400 → BAD_REQUEST with the runner's reason, other failures → BAD_GATEWAY. */
async function runnerJson(runnerUrl: string, path: string, init: RequestInit, deploymentId: string): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${runnerUrl}${path}`, { ...init, signal: AbortSignal.timeout(15_000) });
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
  const json = await runnerJson(runnerUrl, `/jobs/${encodeURIComponent(deployment.runnerJobId)}/nodes/${encodeURIComponent(input.nodeId)}/taps`, {}, input.deploymentId);
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
  const query = new URLSearchParams({ node: input.nodeId, key: input.key });
  const json = await runnerJson(runnerUrl, `/jobs/${encodeURIComponent(deployment.runnerJobId)}/state?${query.toString()}`, {}, input.deploymentId);
  const parsed = keyStateViewSchema.safeParse(json);
  if (!parsed.success) throw new TRPCError({ code: "BAD_GATEWAY", message: `unexpected state answer from the runner: ${z.prettifyError(parsed.error)}` });
  return { deploymentId: input.deploymentId, nodeId: input.nodeId, key: input.key, state: parsed.data };
}
