// Templates: `keyflow.pipeline/v1` files for the seeds' patterns, kept in examples/templates/ (each
// passes `keyflow validate`). Read from disk on first use; "New from template" copies one into a
// new pipeline's draft.
import fs from "node:fs";
import path from "node:path";
import { pipelineDocumentSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";

export interface PipelineTemplate {
  /** The file name without `.json`, e.g. `velocity-check`. */
  id: string;
  /** `Velocity check`. */
  title: string;
  description: string;
  nodeCount: number;
  /** Operator types used, in document order, without repeats. */
  operators: string[];
  graph: PipelineDocument;
}

/** examples/templates: KEYFLOW_TEMPLATES_DIR, else found from the working directory upwards (the repository root or apps/web). */
export function templatesDir(env: Record<string, string | undefined> = process.env, cwd: string = process.cwd()): string | undefined {
  if (env.KEYFLOW_TEMPLATES_DIR) return path.resolve(cwd, env.KEYFLOW_TEMPLATES_DIR);
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "examples", "templates");
    if (fs.existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

export function titleOf(id: string): string {
  const words = id.replace(/[-_.]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Every template in `dir`, by title. A file that is not a valid pipeline is an error naming it: templates are tested to be valid. */
export function loadTemplates(dir: string): PipelineTemplate[] {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  return files
    .map((file) => {
      const where = path.join(dir, file);
      const raw: unknown = JSON.parse(fs.readFileSync(where, "utf8"));
      const graph = pipelineDocumentSchema.parse(raw);
      const checked = validatePipeline(graph);
      if (!checked.ok) throw new Error(`template ${where} is invalid: ${checked.issues.map((i) => i.message).join("; ")}`);
      const id = file.replace(/\.json$/, "");
      return {
        id,
        title: titleOf(id),
        description: graph.description ?? "",
        nodeCount: graph.nodes.length,
        operators: [...new Set(graph.nodes.map((n) => n.type))],
        graph,
      };
    })
    .sort((a, b) => a.title.localeCompare(b.title));
}

let cached: PipelineTemplate[] | undefined;

export function listTemplates(): PipelineTemplate[] {
  if (cached) return cached;
  const dir = templatesDir();
  cached = dir ? loadTemplates(dir) : [];
  return cached;
}
