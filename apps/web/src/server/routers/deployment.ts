import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { hasRole } from "../auth/roles";
import { deployVersion } from "../services/deployments";
import { approvedPromotion } from "../services/promotions";
import { deploymentCheckpoints, keyState, liveMetrics, nodeTaps, stopDeployment, throttleSink } from "../services/operations";
import { analystProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const deploymentInput = z.object({ deploymentId: z.string().min(1) });

export const deploymentRouter = createTRPCRouter({
  deploy: analystProcedure
    .input(z.object({ versionId: z.string().min(1), mode: z.enum(["shadow", "enforcing", "test"]).default("shadow"), reason: z.string().trim().max(2_000).optional() }))
    .mutation(async ({ ctx, input }) => {
      // Analysts deploy to shadow; anything that could enforce needs an approver, and enforcement an approved promotion of this exact graph.
      if (input.mode !== "shadow" && !hasRole(ctx.user.role, "approver")) throw new TRPCError({ code: "FORBIDDEN", message: `deploying in ${input.mode} mode needs the approver role; ${ctx.user.email} is an ${ctx.user.role}` });
      const prisma = (await ctx.db()).prisma;
      const promotion = input.mode === "enforcing" ? await approvedPromotion(prisma, input.versionId) : null;
      const deployment = await deployVersion(prisma, ctx.env.runnerUrl, input);
      await ctx.audit({ action: promotion ? "promote" : "deploy", subjectType: "deployment", subjectId: deployment.id, details: { pipelineId: deployment.pipelineId, versionId: deployment.versionId, mode: deployment.mode, status: deployment.status, promotionId: promotion?.id ?? null }, reason: input.reason ?? null });
      return deployment;
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
  stop: analystProcedure.input(deploymentInput.extend({ reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    const result = await stopDeployment(prisma, ctx.env.runnerUrl, input.deploymentId);
    const row = await prisma.deployment.findUnique({ where: { id: input.deploymentId }, select: { pipelineId: true, versionId: true, mode: true } });
    await ctx.audit({ action: "stop", subjectType: "deployment", subjectId: input.deploymentId, details: { pipelineId: row?.pipelineId ?? null, versionId: row?.versionId ?? null, mode: row?.mode ?? null, status: result.deployment.status }, reason: input.reason ?? null });
    return result;
  }),
});
