// Between documents and Prisma's Json columns. Documents are validated by zod on the way in
// (tRPC inputs) and again on the way out (stored rows are parsed, never cast), so a row written by
// an older format fails loudly here instead of deep inside the canvas.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { pipelineDocumentSchema, type PipelineDocument } from "@keyflow/operators";
import type { Prisma } from "@keyflow/db";

type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

const jsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(jsonValueSchema), z.record(z.string(), jsonValueSchema)]),
);
const jsonObjectSchema = z.record(z.string(), jsonValueSchema);

/** A document as a Json column value (plain JSON: no undefined members, no class instances). */
export function toJsonColumn(doc: PipelineDocument): Prisma.InputJsonObject {
  const plain: unknown = JSON.parse(JSON.stringify(doc));
  return jsonObjectSchema.parse(plain);
}

/** A stored graph or draft, parsed back into a document. */
export function fromJsonColumn(value: Prisma.JsonValue, where: string): PipelineDocument {
  const parsed = pipelineDocumentSchema.safeParse(value);
  if (!parsed.success) {
    throw new TRPCError({
      code: "INTERNAL_SERVER_ERROR",
      message: `${where} holds no valid keyflow.pipeline/v1 document: ${z.prettifyError(parsed.error)}`,
    });
  }
  return parsed.data;
}
