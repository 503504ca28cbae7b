// Importing a `keyflow.pipeline/v1` file: any JSON is accepted as input; if its shape is a pipeline
// document it becomes a draft (of a new pipeline, or of an existing one, renamed to it), whatever
// the validator thinks of it, and the validator's issues go back to be shown. A file whose shape is
// wrong is not stored; its issues say why.
import { validatePipeline, type Issue } from "@keyflow/operators";
import type { PrismaClient } from "@keyflow/db";
import { notFound } from "../errors";
import { createPipeline, saveDraft, type InTransaction } from "./pipelines";

export type ImportResult = { ok: false; issues: Issue[] } | { ok: true; pipelineId: string; name: string; created: boolean; issues: Issue[] };

/** `audit` runs in the transaction that stores the draft (see pipelines.ts). */
export async function importDraft(
  prisma: PrismaClient,
  input: { graph: unknown; into?: string | undefined; name?: string | undefined },
  audit?: InTransaction<{ pipelineId: string; name: string; created: boolean }>,
): Promise<ImportResult> {
  const checked = validatePipeline(input.graph);
  if (!checked.document) return { ok: false, issues: checked.issues };
  let doc = checked.document;
  if (input.into !== undefined) {
    const target = await prisma.pipeline.findUnique({ where: { id: input.into }, select: { id: true, name: true } });
    if (!target) throw notFound("pipeline", input.into);
    // The document is about to become this pipeline's draft: it takes the pipeline's name (it names Kafka topics).
    doc = { ...doc, name: target.name };
    await saveDraft(prisma, { pipelineId: target.id, graph: doc }, audit ? (tx) => audit(tx, { pipelineId: target.id, name: target.name, created: false }) : undefined);
    return { ok: true, pipelineId: target.id, name: target.name, created: false, issues: validatePipeline(doc).issues };
  }
  const name = input.name ?? doc.name;
  if (name !== doc.name) doc = { ...doc, name };
  const created = await createPipeline(prisma, { name, description: doc.description, graph: doc }, audit ? (tx, c) => audit(tx, { pipelineId: c.id, name, created: true }) : undefined);
  return { ok: true, pipelineId: created.id, name, created: true, issues: validatePipeline(doc).issues };
}
