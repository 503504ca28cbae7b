// Promotion to enforcement: analysts ask, approvers (never the requester) approve or reject with a
// comment. Executing an approved promotion (switching the shadow deployment's output at a
// checkpoint boundary) is not built yet.
import { z } from "zod";
import { decidePromotion, listPromotions, requestPromotion } from "../services/promotions";
import { analystProcedure, approverProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const comment = z.string().trim().max(2_000).default("");

export const promotionRouter = createTRPCRouter({
  list: authedProcedure.input(z.object({ pipelineId: z.string().min(1) })).query(async ({ ctx, input }) => listPromotions((await ctx.db()).prisma, input.pipelineId)),
  request: analystProcedure
    .input(z.object({ versionId: z.string().min(1), reason: comment }))
    .mutation(async ({ ctx, input }) => requestPromotion((await ctx.db()).prisma, ctx.user, input)),
  approve: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => decidePromotion((await ctx.db()).prisma, ctx.user, { ...input, decision: "approve" })),
  reject: approverProcedure
    .input(z.object({ requestId: z.string().min(1), comment }))
    .mutation(async ({ ctx, input }) => decidePromotion((await ctx.db()).prisma, ctx.user, { ...input, decision: "reject" })),
});
