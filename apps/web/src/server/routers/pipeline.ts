import { z } from "zod";
import { pipelineDocumentSchema, validatePipeline } from "@keyflow/operators";
import { createPipeline, getPipeline, listPipelines, saveDraft, saveVersion } from "../services/pipelines";
import { createTRPCRouter, publicProcedure } from "../trpc";

const id = z.string().min(1);
/** A pipeline's name is its document's name: it names Kafka topics (`<name>.dlq`). */
const pipelineName = pipelineDocumentSchema.shape.name;

export const pipelineRouter = createTRPCRouter({
  list: publicProcedure.query(async ({ ctx }) => listPipelines((await ctx.db()).prisma)),

  get: publicProcedure.input(z.object({ id })).query(async ({ ctx, input }) => getPipeline((await ctx.db()).prisma, input.id)),

  create: publicProcedure
    .input(z.object({ name: pipelineName, description: z.string().max(2_000).optional(), graph: pipelineDocumentSchema.optional() }))
    .mutation(async ({ ctx, input }) => createPipeline((await ctx.db()).prisma, input)),

  saveDraft: publicProcedure
    .input(z.object({ pipelineId: id, graph: pipelineDocumentSchema }))
    .mutation(async ({ ctx, input }) => saveDraft((await ctx.db()).prisma, input)),

  saveVersion: publicProcedure
    .input(z.object({ pipelineId: id, graph: pipelineDocumentSchema, message: z.string().max(2_000).default("") }))
    .mutation(async ({ ctx, input }) => saveVersion((await ctx.db()).prisma, { ...input, author: ctx.actor })),

  /** The shared validator's verdict on a graph. Stores nothing; a mutation so big graphs travel in the body, not the URL. */
  validate: publicProcedure.input(z.object({ graph: pipelineDocumentSchema })).mutation(({ input }) => {
    const { ok, issues } = validatePipeline(input.graph);
    return { ok, issues };
  }),
});
