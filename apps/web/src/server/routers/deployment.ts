import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { hasRole } from "../auth/roles";
import { deployVersion } from "../services/deployments";
import { switchForAudit } from "../services/rule-jobs";
import { approvedPromotion } from "../services/promotions";
import { deploymentCheckpoints, keyState, liveMetrics, nodeTaps, recentControls, replaceDeployment, savepointDeployment, stopDeployment, throttleSink } from "../services/operations";
import type { RestoreSource } from "../services/operations";
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
      const promotion = input.mode === "enforcing" ? await approvedPromotion(prisma, input.versionId) : null;
      const deployment = await deployVersion(prisma, ctx.env.runnerUrl, { versionId: input.versionId, mode: input.mode, ...(input.previous ? { previousMode: input.previous } : {}) });
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
  /** Operations / debugging: a records-per-second cap on a sink of the running job (null lifts it). */
  throttle: analystProcedure
    .input(deploymentInput.extend({ nodeId: z.string().min(1), recordsPerSecond: z.number().min(0.1).max(1_000_000).nullable() }))
    .mutation(async ({ ctx, input }) => throttleSink((await ctx.db()).prisma, ctx.env.runnerUrl, input)),
  /** Job controls in progress and done (steps, result or error), newest first: the Operations tab polls it. */
  controls: authedProcedure.input(z.object({ pipelineId: z.string().min(1) })).query(({ input }) => recentControls(input.pipelineId)),
  /** A savepoint of the running job (it keeps running); the result names the folder. */
  savepoint: analystProcedure.input(deploymentInput.extend({ reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input }) => {
    const result = await savepointDeployment((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId);
    await ctx.audit({ action: "savepoint", subjectType: "deployment", subjectId: input.deploymentId, details: { pipelineId: result.pipelineId, path: result.path }, reason: input.reason ?? null });
    return result;
  }),
  /** Stop with a savepoint, then the same version again from a kept checkpoint or a savepoint folder, optionally at another parallelism. */
  restore: analystProcedure
    .input(
      deploymentInput.extend({
        from: z.union([z.object({ checkpointId: z.number().int().nonnegative() }), z.object({ savepointPath: z.string().trim().min(1).max(1_000) })]),
        parallelism: z.number().int().min(1).max(32_768).optional(),
        reason: z.string().trim().max(2_000).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => replaceAudited(ctx, { deploymentId: input.deploymentId, kind: "restore", from: input.from, parallelism: input.parallelism, reason: input.reason })),
  /** Change parallelism through a savepoint: stop with a savepoint, deploy from it at the new parallelism. */
  rescale: analystProcedure
    .input(deploymentInput.extend({ parallelism: z.number().int().min(1).max(32_768), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input }) => replaceAudited(ctx, { deploymentId: input.deploymentId, kind: "rescale", from: null, parallelism: input.parallelism, reason: input.reason })),
  /** A stopped deployment again, from its newest checkpoint (the one its stop took) or a savepoint folder; approvers only when it may enforce. */
  resume: analystProcedure
    .input(deploymentInput.extend({ savepointPath: z.string().trim().min(1).max(1_000).optional(), allowNonRestoredState: z.boolean().optional(), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      const target = await resumeTarget(prisma, input.deploymentId);
      assertMayResume(ctx.user, target);
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
  stop: analystProcedure.input(deploymentInput.extend({ reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    const result = await stopDeployment(prisma, ctx.env.runnerUrl, input.deploymentId);
    const row = await prisma.deployment.findUnique({ where: { id: input.deploymentId }, select: { pipelineId: true, versionId: true, mode: true } });
    await ctx.audit({ action: "stop", subjectType: "deployment", subjectId: input.deploymentId, details: { pipelineId: row?.pipelineId ?? null, versionId: row?.versionId ?? null, mode: row?.mode ?? null, status: result.deployment.status }, reason: input.reason ?? null });
    return result;
  }),
});

type ControlCtx = Parameters<Parameters<typeof analystProcedure.mutation>[0]>[0]["ctx"];

/** Restore and rescale, audited whether they succeed or not: either way the job was stopped and redeployed. */
async function replaceAudited(
  ctx: ControlCtx,
  input: { deploymentId: string; kind: "restore" | "rescale"; from: RestoreSource | null; parallelism: number | undefined; reason: string | undefined },
) {
  const prisma = (await ctx.db()).prisma;
  try {
    const result = await replaceDeployment(prisma, ctx.env.runnerUrl, { ...input, mayEnforce: hasRole(ctx.user.role, "approver") });
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
