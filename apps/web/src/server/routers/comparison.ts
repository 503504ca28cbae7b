// The shadow version of a rule against its enforcing version over the same events: counts,
// alerts per hour, samples, and precision and recall where the records carry a label.
import { z } from "zod";
import { compareVersions } from "../services/comparison";
import { authedProcedure, createTRPCRouter } from "../trpc";

export const comparisonRouter = createTRPCRouter({
  compare: authedProcedure
    .input(
      z.object({
        pipelineId: z.string().min(1),
        newVersionId: z.string().min(1).optional(),
        oldVersionId: z.string().min(1).optional(),
        labelField: z.string().trim().min(1).max(200).nullable().default("isFraud"),
        range: z.object({ fromTs: z.number().nullable(), toTs: z.number().nullable() }).optional(),
        samples: z.number().int().min(0).max(50).default(3),
      }),
    )
    .query(async ({ ctx, input }) => compareVersions((await ctx.db()).prisma, ctx.env.kafkaBrokers, input)),
});
