// Promotion to enforcement: analysts ask (with a written reason when the version has spent less
// than the policy's days in shadow), approvers (never the requester) approve or reject with a
// comment, and approvers roll enforcement back to the previous version (approved, or an emergency
// with a reason). Promotion and rollback switch the rule job's branches at one checkpoint boundary
// (services/deployments.ts, services/rule-jobs.ts); the audit records that checkpoint and the
// source offsets at the boundary.
import { z } from "zod";
import { DEFAULT_SHADOW_POLICY_DAYS, decidePromotion, listPromotions, promotionCompat, requestPromotion, rollbackEnforcement, rollbackPlan, shadowAge } from "../services/promotions";
import { switchForAudit } from "../services/rule-jobs";
import { analystProcedure, approverProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const comment = z.string().trim().max(2_000).default("");
const pipelineInput = z.object({ pipelineId: z.string().min(1) });

export const promotionRouter = createTRPCRouter({
  list: authedProcedure.input(pipelineInput).query(async ({ ctx, input }) => listPromotions((await ctx.db()).prisma, input.pipelineId)),
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
      ? await prisma.promotionRequest.findFirst({ where: { versionId: rollback.plan.previous.versionId, status: "approved" }, orderBy: { decidedAt: "desc" }, select: { id: true, decidedBy: true } })
      : null;
    return { policyDays, versions: ages, enforcing: enforcing.map((d) => ({ deploymentId: d.id, versionId: d.versionId, number: d.version.number, status: d.status, since: d.createdAt })), rollback: { ...rollback, previousApproval } };
  }),
  /** The approver's state check: does the rule job with this version restore from its running job's newest checkpoint? */
  compat: authedProcedure.input(z.object({ versionId: z.string().min(1) })).query(async ({ ctx, input }) => promotionCompat((await ctx.db()).prisma, ctx.env.runnerUrl, input.versionId)),
  request: analystProcedure
    .input(z.object({ versionId: z.string().min(1), reason: comment }))
    .mutation(async ({ ctx, input }) => requestPromotion((await ctx.db()).prisma, ctx.user, input, { policyDays: ctx.env.shadowPolicyDays ?? DEFAULT_SHADOW_POLICY_DAYS, now: new Date() })),
  approve: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => decidePromotion((await ctx.db()).prisma, ctx.user, { ...input, decision: "approve" })),
  reject: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => decidePromotion((await ctx.db()).prisma, ctx.user, { ...input, decision: "reject" })),
  /** One action back to the previous enforcing version: with its approved request, or `emergency` with a reason. */
  rollback: approverProcedure
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
          ruleJobId: result.deployment.runnerJobId,
          switch: switchForAudit(routing),
        },
        reason: input.reason || null,
      });
      return result;
    }),
});
