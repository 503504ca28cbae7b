// Backtests: analysts replay a version over a recorded range (a Kafka topic between two offsets or
// two instants, or a file on the runner, uploaded through POST /api/backtests/files) and read its progress; the comparison router compares it
// with the enforcing version or another backtest over the same range.
import { z } from "zod";
import { backtestRangeSchema, getBacktest, listBacktests, startBacktest } from "../services/backtests";
import { analystProcedure, authedProcedure, createTRPCRouter } from "../trpc";

export const backtestsRouter = createTRPCRouter({
  list: authedProcedure.input(z.object({ pipelineId: z.string().min(1) })).query(async ({ ctx, input }) => listBacktests((await ctx.db()).prisma, ctx.env.runnerUrl, input.pipelineId)),
  get: authedProcedure.input(z.object({ backtestId: z.string().min(1) })).query(async ({ ctx, input }) => getBacktest((await ctx.db()).prisma, ctx.env.runnerUrl, input.backtestId)),
  /** Audited ("backtest") in the transaction that records it. */
  start: analystProcedure
    .input(z.object({ versionId: z.string().min(1), range: backtestRangeSchema }))
    .mutation(async ({ ctx, input }) => startBacktest((await ctx.db()).prisma, ctx.env.runnerUrl, ctx.user, input)),
});
