// Two sides' alerts over the same events: a shadow version against the enforcing one (the default),
// or any version, a backtest, or another rule engine's alert topic; counts, alerts per hour,
// samples, and precision and recall from a label field or a chargeback topic.
import { z } from "zod";
import { readBacktestFile } from "../services/backtests-files";
import { compareVersions, comparisonLabelsSchema, comparisonSideSchema } from "../services/comparison";
import { authedProcedure, createTRPCRouter } from "../trpc";

export const comparisonRouter = createTRPCRouter({
  compare: authedProcedure
    .input(
      z.object({
        pipelineId: z.string().min(1),
        newSide: comparisonSideSchema.optional(),
        oldSide: comparisonSideSchema.optional(),
        newVersionId: z.string().min(1).optional(),
        oldVersionId: z.string().min(1).optional(),
        labelField: z.string().trim().min(1).max(200).nullable().default("isFraud"),
        labels: comparisonLabelsSchema.optional(),
        range: z.object({ fromTs: z.number().nullable(), toTs: z.number().nullable() }).optional(),
        samples: z.number().int().min(0).max(50).default(3),
      }),
    )
    .query(async ({ ctx, input }) => compareVersions((await ctx.db()).prisma, ctx.env.kafkaBrokers, input, (file) => readBacktestFile(ctx.env.runnerUrl, file))),
});
