// Deploys and the operations of a running deployment. Every operation passes the role matrix
// (services/operating-roles.ts) before it touches the job, and is on the audit trail.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import type { PrismaClient } from "@keyflow/db";
import { formatBytes, formatDuration } from "../../live/format";
import { hasRole } from "../auth/roles";
import { deployVersion } from "../services/deployments";
import { switchForAudit } from "../services/rule-jobs";
import { enforceApproved, MIN_WRITTEN_REASON } from "../services/promotions";
import { deploymentCheckpoints, keyState, liveMetrics, nodeTaps, recentControls, replaceDeployment, savepointDeployment, stopDeployment, throttleSink } from "../services/operations";
import type { RestoreSource } from "../services/operations";
import { allowedJobActions, requireJobAction, requireSavepointChoice, type JobEnforcement } from "../services/operating-roles";
import { probeRunner } from "../services/runner-health";
import { assertMayResume, resumeDeployment, resumeTarget } from "../services/resume";
import { analystProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const deploymentInput = z.object({ deploymentId: z.string().min(1) });

export const deploymentRouter = createTRPCRouter({
  deploy: analystProcedure
    .input(
      z.object({
        versionId: z.string().min(1),
        mode: z.enum(["shadow", "enforcing", "test"]).default("shadow"),
        reason: z.string().trim().max(2_000).optional(),
        /** On a promotion: the version that enforced until now drops to shadow (default) or stops, at the same checkpoint boundary. */
        previous: z.enum(["shadow", "stopped"]).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      // Analysts deploy to shadow; anything that could enforce needs an approver, and enforcement an approved promotion of this exact graph.
      if (input.mode !== "shadow" && !hasRole(ctx.user.role, "approver")) throw new TRPCError({ code: "FORBIDDEN", message: `deploying in ${input.mode} mode needs the approver role; ${ctx.user.email} is an ${ctx.user.role}` });
      const prisma = (await ctx.db()).prisma;
      // An enforcing deploy uses up the approval that allows it; a test deploy of an unapproved version writes only shadow outputs (services/deployment-mode.ts).
      const { deployment, promotion } =
        input.mode === "enforcing"
          ? await enforceApproved(prisma, ctx.env.runnerUrl, { versionId: input.versionId, ...(input.previous ? { previousMode: input.previous } : {}) })
          : { deployment: await deployVersion(prisma, ctx.env.runnerUrl, { versionId: input.versionId, mode: input.mode }), promotion: null };
      // A switch inside the rule job is recorded with its checkpoint and the source offsets at the boundary.
      const routing = deployment.routingSwitch;
      await ctx.audit({
        action: promotion ? "promote" : "deploy",
        subjectType: "deployment",
        subjectId: deployment.id,
        details: {
          pipelineId: deployment.pipelineId,
          versionId: deployment.versionId,
          mode: deployment.mode,
          status: deployment.status,
          promotionId: promotion?.id ?? null,
          // The approver's choice for the version that enforced until now (it applies when one did).
          ...(input.mode === "enforcing" ? { previous: input.previous ?? "shadow" } : {}),
          ruleJobId: deployment.runnerJobId,
          switch: switchForAudit(routing),
        },
        reason: input.reason ?? null,
      });
      return deployment;
    }),
  /** Whether the runner answers (and since when it does or does not): the UI never shows a job "running" from stale data. */
  runnerHealth: authedProcedure.query(async ({ ctx }) => {
    const h = await probeRunner(ctx.env.runnerUrl);
    return { reachable: h.reachable, since: h.since, checkedAt: h.checkedAt };
  }),
  /** Server-sent events: the running job's figures once a second, rates computed on the server. */
  liveMetrics: authedProcedure.input(deploymentInput).subscription(async function* ({ ctx, input, signal }) {
    yield* liveMetrics((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId, signal);
  }),
  checkpoints: authedProcedure.input(deploymentInput).query(async ({ ctx, input }) => deploymentCheckpoints((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId)),
  /** Node drill-down: the runner's taps on a node (last records into it, last dead letters with reasons). */
  taps: authedProcedure.input(deploymentInput.extend({ nodeId: z.string().min(1) })).query(async ({ ctx, input }) => nodeTaps((await ctx.db()).prisma, ctx.env.runnerUrl, input)),
  /** Node drill-down: one key's state and timers (the runner's queryable state). */
  keyState: authedProcedure
    .input(deploymentInput.extend({ nodeId: z.string().min(1), key: z.string().min(1).max(1_000) }))
    .query(async ({ ctx, input }) => keyState((await ctx.db()).prisma, ctx.env.runnerUrl, input)),
  /** What the caller may do on this deployment's job, each with the reason when not (the role matrix): the Operations tab's buttons follow it. */
  allowedActions: authedProcedure.input(deploymentInput).query(async ({ ctx, input }) => allowedJobActions((await ctx.db()).prisma, ctx.user, input.deploymentId)),
  /** Operations / debugging: a records-per-second cap on a sink of the running job (null lifts it). */
  throttle: analystProcedure
    .input(deploymentInput.extend({ nodeId: z.string().min(1), recordsPerSecond: z.number().min(0.1).max(1_000_000).nullable(), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input, path }) => {
      const prisma = (await ctx.db()).prisma;
      const job = await requireJobAction(prisma, ctx.user, path, input.deploymentId, "throttle");
      const result = await throttleSink(prisma, ctx.env.runnerUrl, input);
      await ctx.audit({
        action: "throttle",
        subjectType: "deployment",
        subjectId: input.deploymentId,
        details: { pipelineId: job.pipelineId, nodeId: input.nodeId, recordsPerSecond: result.recordsPerSecond, enforcing: job.enforcing !== null },
        reason: input.reason ?? null,
      });
      return result;
    }),
  /** Job controls in progress and done (steps, result or error), newest first: the Operations tab polls it. */
  controls: authedProcedure.input(z.object({ pipelineId: z.string().min(1) })).query(({ input }) => recentControls(input.pipelineId)),
  /** A savepoint of the running job (it keeps running); the result names the folder. */
  savepoint: analystProcedure.input(deploymentInput.extend({ reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input, path }) => {
    await requireJobAction((await ctx.db()).prisma, ctx.user, path, input.deploymentId, "savepoint");
    const result = await savepointDeployment((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId);
    await ctx.audit({ action: "savepoint", subjectType: "deployment", subjectId: input.deploymentId, details: { pipelineId: result.pipelineId, path: result.path }, reason: input.reason ?? null });
    return result;
  }),
  /**
   * Stop with a savepoint, then the same version again from one of the job's kept checkpoints or own
   * savepoints (or, `anotherJob`, a savepoint an approver picks explicitly), optionally at another parallelism.
   */
  restore: analystProcedure
    .input(
      deploymentInput.extend({
        from: z.union([z.object({ checkpointId: z.number().int().nonnegative() }), z.object({ savepointPath: z.string().trim().min(1).max(1_000), anotherJob: z.boolean().optional() })]),
        parallelism: z.number().int().min(1).max(32_768).optional(),
        reason: z.string().trim().max(2_000).optional(),
      }),
    )
    .mutation(async ({ ctx, input, path }) => replaceAudited(ctx, path, { deploymentId: input.deploymentId, kind: "restore", from: input.from, parallelism: input.parallelism, reason: input.reason })),
  /** Change parallelism through a savepoint: stop with a savepoint, deploy from it at the new parallelism. */
  rescale: analystProcedure
    .input(deploymentInput.extend({ parallelism: z.number().int().min(1).max(32_768), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input, path }) => replaceAudited(ctx, path, { deploymentId: input.deploymentId, kind: "rescale", from: null, parallelism: input.parallelism, reason: input.reason })),
  /** A stopped deployment again, from its newest checkpoint (the one its stop took) or a savepoint folder; approvers only when it may enforce. */
  resume: analystProcedure
    .input(deploymentInput.extend({ savepointPath: z.string().trim().min(1).max(1_000).optional(), anotherJob: z.boolean().optional(), allowNonRestoredState: z.boolean().optional(), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input, path }) => {
      const prisma = (await ctx.db()).prisma;
      const target = await resumeTarget(prisma, input.deploymentId);
      assertMayResume(ctx.user, target);
      if (input.savepointPath) await requireSavepointChoice(prisma, ctx.user, path, { deploymentId: target.id, runnerJobId: target.runnerJobId, savepointPath: input.savepointPath, anotherJob: input.anotherJob === true });
      const audit = (details: Record<string, string | number | boolean | null>) =>
        ctx.audit({ action: "resume", subjectType: "deployment", subjectId: target.id, details: { pipelineId: target.pipelineId, versionId: target.versionId, mode: target.mode, runnerJobId: target.runnerJobId, savepointPath: input.savepointPath ?? null, ...details }, reason: input.reason ?? null });
      try {
        const result = await resumeDeployment(prisma, ctx.env.runnerUrl, input);
        await audit({ status: "succeeded", from: result.from, deploymentId: result.deployment.id });
        return result;
      } catch (error) {
        await audit({ status: "failed", error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    }),
  /**
   * Stops the deployment (one branch of its rule job, or the whole job). Stopping the enforcing
   * version says what happens to enforcement: another version enforces instead (`enforceInstead`,
   * with its own unused approval, in the same switch) or enforcement stops (`enforcementStops`, with
   * a written reason). The result line says what enforces afterwards.
   */
  stop: analystProcedure
    .input(deploymentInput.extend({ reason: z.string().trim().max(2_000).optional(), enforceInstead: z.string().min(1).optional(), enforcementStops: z.boolean().optional() }))
    .mutation(async ({ ctx, input, path }) => {
      const prisma = (await ctx.db()).prisma;
      const job = await requireJobAction(prisma, ctx.user, path, input.deploymentId, "stop");
      const row = await prisma.deployment.findUnique({ where: { id: input.deploymentId }, select: { pipelineId: true, versionId: true, mode: true } });
      const before = await enforcingVersion(prisma, job.pipelineId);
      const handover = job.isEnforcingVersion ? await successor(prisma, ctx.env.runnerUrl, job, input) : null;
      const instead = handover ? { versionId: handover.versionId, number: handover.number, promotionId: handover.promotionId, deploymentId: handover.deploymentId, switch: switchForAudit(handover.routingSwitch) } : null;
      // The successor's switch stopped this version in the rule job; a job of its own (from before rule jobs) still has to be stopped.
      const closed = await prisma.deployment.findUniqueOrThrow({ where: { id: input.deploymentId }, select: { id: true, status: true, stoppedAt: true } });
      const result =
        handover?.routingSwitch && closed.status !== "pending" && closed.status !== "running"
          ? { deployment: closed, jobStatus: "running", finalCheckpoint: null, routingSwitch: handover.routingSwitch }
          : await stopDeployment(prisma, ctx.env.runnerUrl, input.deploymentId);
      const after = await enforcingVersion(prisma, job.pipelineId);
      await ctx.audit({
        action: "stop",
        subjectType: "deployment",
        subjectId: input.deploymentId,
        details: {
          pipelineId: row?.pipelineId ?? null,
          versionId: row?.versionId ?? null,
          mode: row?.mode ?? null,
          status: result.deployment.status,
          enforcing: { before: before?.number ?? null, after: after?.number ?? null },
          ...(job.isEnforcingVersion ? (instead ? { enforcedInstead: instead } : { enforcementStops: true }) : {}),
        },
        reason: input.reason ?? null,
      });
      return { ...result, enforcement: after ? { versionNumber: after.number, deploymentId: after.deploymentId } : null, result: stopResultLine(input.deploymentId, job, result, before, after) };
    }),
});

async function enforcingVersion(prisma: PrismaClient, pipelineId: string): Promise<{ number: number; deploymentId: string } | null> {
  const row = await prisma.deployment.findFirst({ where: { pipelineId, mode: "enforcing", status: { in: ["pending", "running"] } }, orderBy: { createdAt: "desc" }, select: { id: true, version: { select: { number: true } } } });
  return row ? { number: row.version.number, deploymentId: row.id } : null;
}

/**
 * Stopping the enforcing version: the version that enforces instead (its approval used up, the old
 * version stopped in the same switch), or null when the caller said in words that enforcement stops.
 */
async function successor(prisma: PrismaClient, runnerUrl: string, job: JobEnforcement, input: { enforceInstead?: string | undefined; enforcementStops?: boolean | undefined; reason?: string | undefined }) {
  if (input.enforceInstead !== undefined) {
    const version = await prisma.pipelineVersion.findUnique({ where: { id: input.enforceInstead }, select: { id: true, number: true, pipelineId: true } });
    if (!version || version.pipelineId !== job.pipelineId || version.number === job.versionNumber) {
      throw new TRPCError({ code: "BAD_REQUEST", message: `enforceInstead must be another version of rule ${job.rule} than version ${job.versionNumber}` });
    }
    const { deployment, promotion } = await enforceApproved(prisma, runnerUrl, { versionId: version.id, previousMode: "stopped" });
    return { versionId: version.id, number: version.number, promotionId: promotion.id, deploymentId: deployment.id, routingSwitch: deployment.routingSwitch };
  }
  if (input.enforcementStops === true) {
    if ((input.reason ?? "").trim().length < MIN_WRITTEN_REASON) {
      throw new TRPCError({ code: "BAD_REQUEST", message: `stopping version ${job.versionNumber} stops the enforcement of rule ${job.rule}: that needs a written reason (${MIN_WRITTEN_REASON} characters or more), which goes on the audit trail` });
    }
    return null;
  }
  throw new TRPCError({
    code: "BAD_REQUEST",
    message: `version ${job.versionNumber} enforces rule ${job.rule}: say which version enforces instead, or that enforcement stops (with a reason); stopping it alone would leave the rule enforcing nothing`,
  });
}

/** The stop's result in words: what stopped, and what enforces the rule now (never "running" for a rule that enforces nothing). */
function stopResultLine(
  deploymentId: string,
  job: JobEnforcement,
  result: Awaited<ReturnType<typeof stopDeployment>>,
  before: { number: number } | null,
  after: { number: number } | null,
): string {
  const cp = result.finalCheckpoint;
  const branch = "routingSwitch" in result;
  const stopped = branch
    ? `Version ${job.versionNumber} stopped at checkpoint ${result.routingSwitch.checkpointId}; rule job ${job.runnerJobId ?? "?"} goes on with its other branches.`
    : result.jobStatus === "gone"
      ? `Deployment ${deploymentId} was no longer on the runner; recorded as stopped.`
      : `Deployment ${deploymentId} ${result.deployment.status}${cp ? ` after checkpoint ${cp.id} (${formatDuration(cp.durationMs)}, ${formatBytes(cp.stateBytes)})` : ""}.`;
  if (after) return `${stopped} Rule ${job.rule}: version ${after.number} ${after.number === before?.number ? "still enforces" : "enforces now"}.`;
  return before ? `${stopped} The enforcement of rule ${job.rule} stops: no version enforces it now.` : stopped;
}

type ControlCtx = Parameters<Parameters<typeof analystProcedure.mutation>[0]>[0]["ctx"];

/**
 * Restore and rescale, audited whether they succeed or not: either way the job was stopped and
 * redeployed. Checked first: the role matrix, and that a savepoint is one of the job's own unless an
 * approver explicitly picks another job's.
 */
async function replaceAudited(
  ctx: ControlCtx,
  path: string,
  input: { deploymentId: string; kind: "restore" | "rescale"; from: RestoreSource | null; parallelism: number | undefined; reason: string | undefined },
) {
  const prisma = (await ctx.db()).prisma;
  const job = await requireJobAction(prisma, ctx.user, path, input.deploymentId, input.kind);
  const from = input.from;
  if (from && "savepointPath" in from) await requireSavepointChoice(prisma, ctx.user, path, { deploymentId: input.deploymentId, runnerJobId: job.runnerJobId, savepointPath: from.savepointPath, anotherJob: from.anotherJob === true });
  try {
    const result = await replaceDeployment(prisma, ctx.env.runnerUrl, input);
    await ctx.audit({
      action: input.kind,
      subjectType: "deployment",
      subjectId: input.deploymentId,
      details: { pipelineId: result.pipelineId, from: input.from ?? { savepointPath: result.savepointPath }, savepointPath: result.savepointPath, parallelism: result.parallelism, newDeploymentId: result.deployment.id, status: "succeeded" },
      reason: input.reason ?? null,
    });
    return result;
  } catch (error) {
    const run = error instanceof TRPCError && error.code === "FORBIDDEN" ? undefined : await latestRunOf(prisma, input.deploymentId);
    if (run && run.deploymentId === input.deploymentId && run.status === "failed") {
      await ctx.audit({
        action: input.kind,
        subjectType: "deployment",
        subjectId: input.deploymentId,
        details: { pipelineId: run.pipelineId, from: input.from, savepointPath: run.savepointPath, parallelism: input.parallelism ?? null, newDeploymentId: run.newDeploymentId, status: "failed", error: run.error, issues: run.issues },
        reason: input.reason ?? null,
      });
    }
    throw error;
  }
}

async function latestRunOf(prisma: Awaited<ReturnType<ControlCtx["db"]>>["prisma"], deploymentId: string) {
  const row = await prisma.deployment.findUnique({ where: { id: deploymentId }, select: { pipelineId: true } });
  return row ? recentControls(row.pipelineId)[0] : undefined;
}
