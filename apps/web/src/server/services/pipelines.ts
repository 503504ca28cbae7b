// Pipelines, their drafts and their immutable numbered versions.
//
// A *draft* is the working copy the designer autosaves: any well-formed document, valid or not.
// A *version* is an immutable snapshot that passed the shared validator; versions are numbered
// 1, 2, 3… per pipeline, and `graphHash` is the sha256 of the graph's canonical JSON.
//
// What is stored is the document as parsed by `pipelineDocumentSchema` (settings defaults filled
// in), not the validator's normalised form: the analyst's own params (e.g. "10m") stay as written,
// so drafts and versions compare cleanly.
//
// Each change takes an optional `audit` callback that runs inside the change's own transaction: the
// change and its audit record commit together, or neither does (a failed append leaves no edit).
import { TRPCError } from "@trpc/server";
import { PIPELINE_FORMAT, pipelineSettingsSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { Prisma, type PrismaClient } from "@keyflow/db";
import { graphHash } from "../canonical-json";
import { notFound, pipelineRejected } from "../errors";
import { fromJsonColumn, toJsonColumn } from "../json";

const RECENT_DEPLOYMENTS = 10;

/** Records a change in the transaction that makes it (the audit trail's rows commit with the edit). */
export type InTransaction<T> = (tx: Prisma.TransactionClient, result: T) => Promise<void>;

export function emptyDocument(name: string, description?: string): PipelineDocument {
  return {
    format: PIPELINE_FORMAT,
    name,
    ...(description ? { description } : {}),
    settings: pipelineSettingsSchema.parse({}),
    nodes: [],
    edges: [],
  };
}

/** The document's name names Kafka topics (`<name>.dlq`): it must be the pipeline's. */
function assertSameName(pipelineName: string, graph: PipelineDocument): void {
  if (graph.name !== pipelineName) {
    throw new TRPCError({
      code: "BAD_REQUEST",
      message: `the document is named ${JSON.stringify(graph.name)} but the pipeline is ${JSON.stringify(pipelineName)}; rename one of them`,
    });
  }
}

export async function listPipelines(prisma: PrismaClient) {
  const rows = await prisma.pipeline.findMany({
    orderBy: [{ updatedAt: "desc" }, { name: "asc" }],
    select: {
      id: true,
      name: true,
      description: true,
      updatedAt: true,
      _count: { select: { versions: true } },
      versions: { orderBy: { number: "desc" }, take: 1, select: { number: true, createdAt: true } },
    },
  });
  return rows.map(({ _count, versions, ...pipeline }) => ({ ...pipeline, versionCount: _count.versions, latestVersion: versions[0] ?? null }));
}

export async function getPipeline(prisma: PrismaClient, id: string) {
  const row = await prisma.pipeline.findUnique({
    where: { id },
    include: {
      versions: { orderBy: { number: "desc" } },
      deployments: {
        orderBy: { createdAt: "desc" },
        take: RECENT_DEPLOYMENTS,
        select: { id: true, versionId: true, mode: true, status: true, desired: true, runnerJobId: true, failureReason: true, createdAt: true, stoppedAt: true },
      },
    },
  });
  if (!row) throw notFound("pipeline", id);
  const { versions, deployments, draft, ...pipeline } = row;
  return {
    ...pipeline,
    draft: fromJsonColumn(draft, `the draft of pipeline ${row.name}`),
    /** Newest first. */
    versions: versions.map(({ graph, ...version }) => ({ ...version, graph: fromJsonColumn(graph, `version ${version.number} of ${row.name}`) })),
    /** The most recent deployments, newest first. */
    deployments,
  };
}

export async function createPipeline(
  prisma: PrismaClient,
  input: { name: string; description?: string | undefined; graph?: PipelineDocument | undefined },
  audit?: InTransaction<{ id: string; name: string; description: string; createdAt: Date }>,
) {
  if (input.graph) assertSameName(input.name, input.graph);
  const draft = input.graph ?? emptyDocument(input.name, input.description);
  try {
    return await prisma.$transaction(async (tx) => {
      const created = await tx.pipeline.create({
        data: { name: input.name, description: input.description ?? draft.description ?? "", draft: toJsonColumn(draft) },
        select: { id: true, name: true, description: true, createdAt: true },
      });
      await audit?.(tx, created);
      return created;
    });
  } catch (error) {
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") {
      throw new TRPCError({ code: "CONFLICT", message: `a pipeline named ${JSON.stringify(input.name)} already exists`, cause: error });
    }
    throw error;
  }
}

export async function saveDraft(prisma: PrismaClient, input: { pipelineId: string; graph: PipelineDocument }, audit?: InTransaction<{ id: string; updatedAt: Date }>) {
  const pipeline = await prisma.pipeline.findUnique({ where: { id: input.pipelineId }, select: { name: true } });
  if (!pipeline) throw notFound("pipeline", input.pipelineId);
  assertSameName(pipeline.name, input.graph);
  return prisma.$transaction(async (tx) => {
    const saved = await tx.pipeline.update({
      where: { id: input.pipelineId },
      data: { draft: toJsonColumn(input.graph) },
      select: { id: true, updatedAt: true },
    });
    await audit?.(tx, saved);
    return saved;
  });
}

/**
 * Validates the graph with the shared validator, then stores it as the next version (and as the
 * draft, which it now is). The pipeline row is locked for the transaction, so two concurrent saves
 * get consecutive numbers instead of one failing on the (pipeline, number) unique index.
 */
export async function saveVersion(
  prisma: PrismaClient,
  input: { pipelineId: string; graph: PipelineDocument; message: string; author: string },
  audit?: InTransaction<{ id: string; number: number; graphHash: string }>,
) {
  const result = validatePipeline(input.graph);
  if (!result.ok) throw pipelineRejected("cannot save a version", result.issues);
  const hash = graphHash(input.graph);
  const graph = toJsonColumn(input.graph);
  const version = await prisma.$transaction(async (tx) => {
    const locked = await tx.$queryRaw<{ name: string }[]>`SELECT name FROM pipelines WHERE id = ${input.pipelineId} FOR UPDATE`;
    const pipeline = locked[0];
    if (!pipeline) throw notFound("pipeline", input.pipelineId);
    assertSameName(pipeline.name, input.graph);
    const last = await tx.pipelineVersion.findFirst({ where: { pipelineId: input.pipelineId }, orderBy: { number: "desc" }, select: { number: true } });
    const created = await tx.pipelineVersion.create({
      data: { pipelineId: input.pipelineId, number: (last?.number ?? 0) + 1, graph, graphHash: hash, message: input.message, author: input.author },
      select: { id: true, pipelineId: true, number: true, graphHash: true, message: true, author: true, createdAt: true },
    });
    await tx.pipeline.update({ where: { id: input.pipelineId }, data: { draft: graph } });
    await audit?.(tx, created);
    return created;
  });
  return { version, warnings: result.issues.filter((issue) => issue.severity !== "error") };
}
