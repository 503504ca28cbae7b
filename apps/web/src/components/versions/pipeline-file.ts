// Pipeline files: export a document as `keyflow.pipeline/v1` JSON (the format `keyflow run` reads),
// and read an uploaded file back, with the place of a JSON syntax error and the validator's
// verdict, before anything is stored. Framework-free.
import { parseJsonWithLocation, validatePipeline, type Issue, type PipelineDocument, type PipelineDocumentInput } from "@keyflow/operators";

/** `velocity-check.keyflow.json`. */
export function exportFileName(doc: Pick<PipelineDocumentInput, "name">, suffix?: string): string {
  return `${doc.name}${suffix ? `-${suffix}` : ""}.keyflow.json`;
}

/** The document as a file: `format` first, then the rest in document order, two-space indent, final newline. */
export function serializePipeline(doc: PipelineDocumentInput): string {
  const { format, name, description, settings, nodes, edges, ...rest } = doc;
  const ordered = { format, name, ...(description !== undefined ? { description } : {}), ...(settings !== undefined ? { settings } : {}), nodes, edges: edges ?? [], ...rest };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

export type ReadPipelineFile =
  | { ok: false; stage: "json"; message: string; line?: number; column?: number }
  | { ok: false; stage: "document"; issues: Issue[]; value: unknown }
  | { ok: true; value: unknown; document: PipelineDocument; issues: Issue[]; errors: number; warnings: number };

/**
 * Reads an uploaded file: its JSON (errors with line and column), its shape as a pipeline document
 * (else the issues say what is wrong, e.g. no `format`), and the validator's issues (a document
 * with errors can still become a draft, to be fixed on the canvas).
 */
export function readPipelineFile(text: string): ReadPipelineFile {
  const clean = text.replace(/^\uFEFF/, "");
  const parsed = parseJsonWithLocation(clean);
  if (!parsed.ok) return { ok: false, stage: "json", message: parsed.message, ...parsed.location };
  const value = parsed.value;
  const result = validatePipeline(value);
  if (!result.document) return { ok: false, stage: "document", issues: result.issues, value };
  const errors = result.issues.filter((i) => i.severity === "error").length;
  return { ok: true, value, document: result.document, issues: result.issues, errors, warnings: result.issues.length - errors };
}

/** A name not in `taken`: `name`, else `name-2`, `name-3`, … (within the 128 characters a name may have). */
export function uniqueName(name: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(name)) return name;
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const candidate = `${name.slice(0, 128 - suffix.length)}${suffix}`;
    if (!used.has(candidate)) return candidate;
  }
}
