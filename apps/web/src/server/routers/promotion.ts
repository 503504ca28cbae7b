// Promotion to enforcement: analysts ask (with a written reason when the version has spent less
// than the policy's days in shadow), approvers (never the requester) approve or reject with a
// comment, and approvers roll enforcement back to the previous version (approved, or an emergency
// with a reason). Promotion and rollback switch the rule job's branches at one checkpoint boundary
// (services/deployments.ts, services/rule-jobs.ts); the audit records that checkpoint and the
// source offsets at the boundary.
import { z } from "zod";
import { TRPCError } from "@trpc/server";
import type { PrismaClient } from "@keyflow/db";
import { notFound } from "../errors";
import { DEFAULT_SHADOW_POLICY_DAYS, decidePromotion, listPromotions, promotionCompat, requestPromotion, rollbackEnforcement, rollbackPlan, shadowAge, type StateCheckRecord } from "../services/promotions";
import { switchForAudit } from "../services/rule-jobs";
import { analystProcedure, approverProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const comment = z.string().trim().max(2_000).default("");
const pipelineInput = z.object({ pipelineId: z.string().min(1) });

export const promotionRouter = createTRPCRouter({
  list: authedProcedure.input(pipelineInput).query(async ({ ctx, input }) => listPromotions((await ctx.db()).prisma, input.pipelineId, ctx.user)),
  /** Days in shadow of each version against the policy, what enforces now, and what a rollback would return to. */
  status: authedProcedure.input(pipelineInput).query(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    const policyDays = ctx.env.shadowPolicyDays ?? DEFAULT_SHADOW_POLICY_DAYS;
    const now = new Date();
    const versions = await prisma.pipelineVersion.findMany({ where: { pipelineId: input.pipelineId }, orderBy: { number: "desc" }, take: 20, select: { id: true, number: true } });
    const ages = await Promise.all(versions.map(async (v) => ({ versionId: v.id, number: v.number, ...(await shadowAge(prisma, v.id, policyDays, now)) })));
    const enforcing = await prisma.deployment.findMany({
      where: { pipelineId: input.pipelineId, mode: "enforcing", status: { in: ["pending", "running"] } },
      orderBy: { createdAt: "desc" },
      select: { id: true, versionId: true, status: true, createdAt: true, version: { select: { number: true } } },
    });
    const rollback = await rollbackPlan(prisma, input.pipelineId).then(
      (plan) => ({ possible: true as const, plan, why: null }),
      (error: unknown) => ({ possible: false as const, plan: null, why: error instanceof Error ? error.message : String(error) }),
    );
    const previousApproval = rollback.plan
      ? await prisma.promotionRequest.findFirst({ where: { versionId: rollback.plan.previous.versionId, status: "approved", usedAt: null }, orderBy: { decidedAt: "desc" }, select: { id: true, decidedBy: true } })
      : null;
    return { policyDays, versions: ages, enforcing: enforcing.map((d) => ({ deploymentId: d.id, versionId: d.versionId, number: d.version.number, status: d.status, since: d.createdAt })), rollback: { ...rollback, previousApproval } };
  }),
  /** The approver's state check: does the rule job with this version restore from its running job's newest checkpoint? */
  compat: authedProcedure.input(z.object({ versionId: z.string().min(1) })).query(async ({ ctx, input }) => promotionCompat((await ctx.db()).prisma, ctx.env.runnerUrl, input.versionId)),
  request: analystProcedure
    .input(z.object({ versionId: z.string().min(1), reason: comment }))
    .mutation(async ({ ctx, input }) => requestPromotion((await ctx.db()).prisma, ctx.user, input, { policyDays: ctx.env.shadowPolicyDays ?? DEFAULT_SHADOW_POLICY_DAYS, now: new Date() })),
  /** Approved only when the version's state fits the running rule job's newest checkpoint (the check is audited with the approval). */
  approve: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      const stateCheck = await approvalStateCheck(prisma, ctx.env.runnerUrl, input.requestId, ctx.user.email);
      return decidePromotion(prisma, ctx.user, { ...input, decision: "approve", ...(stateCheck ? { stateCheck } : {}) });
    }),
  reject: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => decidePromotion((await ctx.db()).prisma, ctx.user, { ...input, decision: "reject" })),
  /** One action back to the previous enforcing version: with its approved request, or `emergency` with a reason. */
  rollback: approverProcedure
    // `current`: what the version enforcing now becomes at the switch (the approver's choice; shadow by default).
    .input(pipelineInput.extend({ emergency: z.boolean().default(false), reason: comment, current: z.enum(["shadow", "stopped"]).optional() }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      const result = await rollbackEnforcement(prisma, ctx.env.runnerUrl, { pipelineId: input.pipelineId, emergency: input.emergency, reason: input.reason, ...(input.current ? { currentTo: input.current } : {}), actor: ctx.user.email });
      const routing = result.deployment.routingSwitch;
      await ctx.audit({
        action: "rollback",
        subjectType: "deployment",
        subjectId: result.deployment.id,
        details: {
          pipelineId: input.pipelineId,
          emergency: input.emergency,
          promotionId: result.promotionId,
          to: { versionId: result.plan.previous.versionId, number: result.plan.previous.number, deploymentId: result.deployment.id, status: result.deployment.status },
          from: result.plan.current.map((d) => ({ versionId: d.versionId, number: d.number, deploymentId: d.deploymentId })),
          stopped: result.stopped,
          current: input.current ?? "shadow",
          ruleJobId: result.deployment.runnerJobId,
          switch: switchForAudit(routing),
        },
        reason: input.reason || null,
      });
      return result;
    }),
});

/**
 * The state check an approval needs: the request's version against the running rule job's newest
 * checkpoint. Refuses (naming the version's nodes) when the state does not fit, or when the runner
 * cannot be asked: an approval is not recorded unchecked. Requests that decidePromotion refuses anyway
 * (one's own request or version, not pending) are left to it, without asking the runner.
 */
async function approvalStateCheck(prisma: PrismaClient, runnerUrl: string, requestId: string, approver: string): Promise<StateCheckRecord | null> {
  const request = await prisma.promotionRequest.findUnique({ where: { id: requestId }, select: { versionId: true, status: true, requestedBy: true, version: { select: { number: true, author: true } } } });
  if (!request) throw notFound("promotion request", requestId);
  if (request.status !== "pending" || request.requestedBy === approver || request.version.author === approver) return null;
  let check: Awaited<ReturnType<typeof promotionCompat>>;
  try {
    check = await promotionCompat(prisma, runnerUrl, request.versionId);
  } catch (error) {
    if (error instanceof TRPCError) throw error;
    throw new TRPCError({ code: "BAD_GATEWAY", message: `version ${request.version.number}'s state could not be checked against its rule job's checkpoint, so the approval is not recorded: ${error instanceof Error ? error.message : String(error)}`, cause: error });
  }
  if (!check.compatible) {
    throw new TRPCError({
      code: "PRECONDITION_FAILED",
      message: `version ${request.version.number}'s state does not fit the newest checkpoint of rule job ${check.ruleJobId ?? "?"}${check.checkpoint ? ` (${check.checkpoint})` : ""}, so it cannot be approved: ${check.problems.join("; ")}`,
    });
  }
  return { ruleJobId: check.ruleJobId, checkpoint: check.checkpoint, compatible: true, dropped: check.dropped };
}
