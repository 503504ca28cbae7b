// A pipeline fixture validated as the runner would, or a throw naming every issue: tests and benches
// build their documents through this instead of each checking validatePipeline's result.
import type { PipelineDocument } from "../pipeline/document";
import { validatePipeline } from "../pipeline/validate";

export function validPipeline(doc: unknown): PipelineDocument {
  const r = validatePipeline(doc);
  if (!r.ok || !r.document) throw new Error(`invalid pipeline fixture:\n${r.issues.map((i) => i.message).join("\n")}`);
  return r.document;
}
