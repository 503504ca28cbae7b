import { z } from "zod";
import { deployVersion } from "../services/deployments";
import { deploymentCheckpoints, liveMetrics, stopDeployment } from "../services/operations";
import { createTRPCRouter, publicProcedure } from "../trpc";

const deploymentInput = z.object({ deploymentId: z.string().min(1) });

export const deploymentRouter = createTRPCRouter({
  deploy: publicProcedure
    .input(z.object({ versionId: z.string().min(1), mode: z.enum(["shadow", "enforcing", "test"]).default("shadow") }))
    .mutation(async ({ ctx, input }) => deployVersion((await ctx.db()).prisma, ctx.env.runnerUrl, input)),
  /** Server-sent events: the running job's figures once a second, rates computed on the server. */
  liveMetrics: publicProcedure.input(deploymentInput).subscription(async function* ({ ctx, input, signal }) {
    yield* liveMetrics((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId, signal);
  }),
  checkpoints: publicProcedure.input(deploymentInput).query(async ({ ctx, input }) => deploymentCheckpoints((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId)),
  stop: publicProcedure.input(deploymentInput).mutation(async ({ ctx, input }) => stopDeployment((await ctx.db()).prisma, ctx.env.runnerUrl, input.deploymentId)),
});
