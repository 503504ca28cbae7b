// Reads a keyflow.pipeline/v1 file for the CLI: the file, its JSON (errors with line and column),
// then the shared validator (errors naming the node and param). Returns problems as lines ready to
// print, never throws for a user's mistake.
import { promises as fs } from "node:fs";
import path from "node:path";
import { formatIssue, parseJsonWithLocation, validatePipeline, type PipelineDocument, type ValidateOptions } from "@keyflow/operators";

export type LoadedPipeline =
  | { ok: true; doc: PipelineDocument; file: string; baseDir: string; warnings: string[] }
  | { ok: false; file: string; problems: string[] };

export async function loadPipelineFile(file: string, cwd = process.cwd(), opts?: ValidateOptions): Promise<LoadedPipeline> {
  const abs = path.resolve(cwd, file);
  let text: string;
  try {
    text = await fs.readFile(abs, "utf8");
  } catch (err) {
    const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder, not a file" : code === "EACCES" ? "permission denied" : err instanceof Error ? err.message : String(err);
    return { ok: false, file, problems: [`${file}: cannot read the pipeline file: ${why}`] };
  }
  const parsed = parseJsonWithLocation(text);
  if (!parsed.ok) {
    return { ok: false, file, problems: [`${file}:${parsed.location.line}:${parsed.location.column}: invalid JSON: ${parsed.message}`] };
  }
  return checkPipeline(parsed.value, file, path.dirname(abs), opts);
}

/** Validates an already-parsed document (the service's POST /jobs uses the same path). */
export function checkPipeline(input: unknown, file: string, baseDir: string, opts?: ValidateOptions): LoadedPipeline {
  const result = validatePipeline(input, opts);
  const errors = result.issues.filter((i) => i.severity === "error");
  const warnings = result.issues.filter((i) => i.severity === "warning").map((i) => `${file}: ${formatIssue(i)}`);
  if (!result.ok || !result.document || errors.length > 0) {
    const problems = errors.map((i) => `${file}: ${formatIssue(i)}`);
    return { ok: false, file, problems: problems.length > 0 ? problems : [`${file}: the pipeline is invalid`] };
  }
  return { ok: true, doc: result.document, file, baseDir, warnings };
}
