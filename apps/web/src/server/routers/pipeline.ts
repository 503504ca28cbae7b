import { z } from "zod";
import { pipelineDocumentSchema, validatePipeline } from "@keyflow/operators";
import { auditDiff } from "../services/audit";
import { dryRunDraft } from "../services/dry-run";
import { importDraft } from "../services/import";
import { voidStalePromotions } from "../services/promotions";
import { createPipeline, getPipeline, listPipelines, saveDraft, saveVersion } from "../services/pipelines";
import { fromJsonColumn } from "../json";
import { analystProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const id = z.string().min(1);
/** A pipeline's name is its document's name: it names Kafka topics (`<name>.dlq`). */
const pipelineName = pipelineDocumentSchema.shape.name;
/** Why, when the author says: kept on the audit record. */
const reason = z.string().trim().max(2_000).optional();

/** A dry run's sample: JSON lines (an uploaded file), or the last N records of the source's Kafka topic. */
const dryRunSample = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("lines"), lines: z.array(z.string()).min(1, "the sample has no lines").max(100_000, "a sample has at most 100,000 lines") }),
  z.object({ kind: z.literal("topic"), topic: z.string().min(1).optional(), lastN: z.number().int().min(1).max(10_000) }),
]);

export const pipelineRouter = createTRPCRouter({
  list: authedProcedure.query(async ({ ctx }) => listPipelines((await ctx.db()).prisma)),

  get: authedProcedure.input(z.object({ id })).query(async ({ ctx, input }) => getPipeline((await ctx.db()).prisma, input.id)),

  create: analystProcedure
    .input(z.object({ name: pipelineName, description: z.string().max(2_000).optional(), graph: pipelineDocumentSchema.optional(), reason }))
    .mutation(async ({ ctx, input }) => {
      // The pipeline and its audit record commit together (a failed append leaves no pipeline).
      return createPipeline((await ctx.db()).prisma, input, (tx, created) =>
        ctx.audit({ action: "create", subjectType: "pipeline", subjectId: created.id, details: { pipelineId: created.id, name: created.name, diff: input.graph ? auditDiff(null, input.graph) : null }, reason: input.reason ?? null }, tx),
      );
    }),

  /** The autosave. Audited as an "edit" with its diff when something other than layout changed. */
  saveDraft: analystProcedure
    .input(z.object({ pipelineId: id, graph: pipelineDocumentSchema, reason }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      const before = await prisma.pipeline.findUnique({ where: { id: input.pipelineId }, select: { name: true, draft: true } });
      const previous = before ? pipelineDocumentSchema.safeParse(before.draft) : null;
      const diff = auditDiff(previous?.success ? previous.data : null, input.graph);
      // The edit and its audit record commit together.
      return saveDraft(
        prisma,
        input,
        diff === null ? undefined : (tx) => ctx.audit({ action: "edit", subjectType: "pipeline", subjectId: input.pipelineId, details: { pipelineId: input.pipelineId, name: before?.name ?? input.graph.name, diff }, reason: input.reason ?? null }, tx),
      );
    }),

  saveVersion: analystProcedure
    .input(z.object({ pipelineId: id, graph: pipelineDocumentSchema, message: z.string().max(2_000).default("") }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      const previous = await prisma.pipelineVersion.findFirst({ where: { pipelineId: input.pipelineId }, orderBy: { number: "desc" }, select: { number: true, graph: true } });
      const before = previous ? fromJsonColumn(previous.graph, `version ${previous.number}`) : null;
      // The version and its audit record commit together.
      const saved = await saveVersion(prisma, { ...input, author: ctx.user.email }, (tx, version) =>
        ctx.audit(
          {
            action: "save_version",
            subjectType: "version",
            subjectId: version.id,
            details: { pipelineId: input.pipelineId, name: input.graph.name, number: version.number, graphHash: version.graphHash, against: previous?.number ?? null, diff: auditDiff(before, input.graph) },
            reason: input.message || null,
          },
          tx,
        ),
      );
      // An approval is for one exact graph: a new version voids the requests for any other.
      await voidStalePromotions(prisma, ctx.user.email, input.pipelineId, saved.version.graphHash);
      return saved;
    }),

  /** Runs the draft on a sample through the runner's bounded mode: counts per node and port, alerts with their evidence, dead letters. */
  dryRun: analystProcedure
    .input(z.object({ graph: pipelineDocumentSchema, sample: dryRunSample, sourceNodeId: z.string().min(1).optional() }))
    .mutation(({ ctx, input }) => dryRunDraft(ctx.env.runnerUrl, input)),

  /** An uploaded keyflow.pipeline/v1 file becomes a draft: of a new pipeline (`name`, default the file's), or of pipeline `into`. */
  importDraft: analystProcedure
    .input(z.object({ graph: z.unknown(), into: id.optional(), name: pipelineName.optional() }))
    .mutation(async ({ ctx, input }) => {
      return importDraft((await ctx.db()).prisma, input, (tx, r) =>
        ctx.audit({ action: r.created ? "create" : "import", subjectType: "pipeline", subjectId: r.pipelineId, details: { pipelineId: r.pipelineId, name: r.name, imported: true } }, tx),
      );
    }),

  /** The shared validator's verdict on a graph. Stores nothing; a mutation so big graphs travel in the body, not the URL. */
  validate: authedProcedure.input(z.object({ graph: pipelineDocumentSchema })).mutation(({ input }) => {
    const { ok, issues } = validatePipeline(input.graph);
    return { ok, issues };
  }),
});
