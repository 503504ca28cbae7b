import { z } from "zod";
import { deployVersion } from "../services/deployments";
import { createTRPCRouter, publicProcedure } from "../trpc";

export const deploymentRouter = createTRPCRouter({
  deploy: publicProcedure
    .input(z.object({ versionId: z.string().min(1), mode: z.enum(["shadow", "enforcing", "test"]).default("shadow") }))
    .mutation(async ({ ctx, input }) => deployVersion((await ctx.db()).prisma, ctx.env.runnerUrl, input)),
});
