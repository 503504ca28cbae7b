import { z } from "zod";
import { pipelineDocumentSchema, validatePipeline } from "@keyflow/operators";
import { dryRunDraft } from "../services/dry-run";
import { importDraft } from "../services/import";
import { createPipeline, getPipeline, listPipelines, saveDraft, saveVersion } from "../services/pipelines";
import { createTRPCRouter, publicProcedure } from "../trpc";

const id = z.string().min(1);
/** A pipeline's name is its document's name: it names Kafka topics (`<name>.dlq`). */
const pipelineName = pipelineDocumentSchema.shape.name;

/** A dry run's sample: JSON lines (an uploaded file), or the last N records of the source's Kafka topic. */
const dryRunSample = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("lines"), lines: z.array(z.string()).min(1, "the sample has no lines").max(100_000, "a sample has at most 100,000 lines") }),
  z.object({ kind: z.literal("topic"), topic: z.string().min(1).optional(), lastN: z.number().int().min(1).max(10_000) }),
]);

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

  /** Runs the draft on a sample through the runner's bounded mode: counts per node and port, alerts with their evidence, dead letters. */
  dryRun: publicProcedure
    .input(z.object({ graph: pipelineDocumentSchema, sample: dryRunSample, sourceNodeId: z.string().min(1).optional() }))
    .mutation(({ ctx, input }) => dryRunDraft(ctx.env.runnerUrl, input)),

  /** An uploaded keyflow.pipeline/v1 file becomes a draft: of a new pipeline (`name`, default the file's), or of pipeline `into`. */
  importDraft: publicProcedure
    .input(z.object({ graph: z.unknown(), into: id.optional(), name: pipelineName.optional() }))
    .mutation(async ({ ctx, input }) => importDraft((await ctx.db()).prisma, input)),

  /** The shared validator's verdict on a graph. Stores nothing; a mutation so big graphs travel in the body, not the URL. */
  validate: publicProcedure.input(z.object({ graph: pipelineDocumentSchema })).mutation(({ input }) => {
    const { ok, issues } = validatePipeline(input.graph);
    return { ok, issues };
  }),
});
