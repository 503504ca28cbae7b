// A rule job: the versions of one rule as branches of ONE job over the same sources, so that a
// promotion or rollback switches their outputs at one common checkpoint boundary (./routing.ts).
// Each version's nodes get ids namespaced by the version (`v4-velocity`), so each branch has its own
// state and a restore maps it by node id like any other node (adding v5 restores v3 and v4 as they
// were; removing v3 needs allowNonRestoredState for its nodes only). Sources the versions share (same
// id, type and params) are read once; a source a version changed gets a namespaced copy of its own.
import { z } from "zod";
import { relativePathInFolder, shadowFilePath, shadowTopic, type PipelineDocument } from "@keyflow/operators";
import { checkPipeline } from "../pipeline/load";

export const branchModeSchema = z.enum(["shadow", "enforcing", "stopped"]);
/** Where a branch's alerts go: `<rule>.shadow`, the enforcement topic (its sinks' own params), or nowhere. */
export type BranchMode = z.infer<typeof branchModeSchema>;

export const ruleJobSpecSchema = z.object({
  /** The rule's name: the job's pipeline name (`<rule>.dlq`, `<rule>.shadow`). */
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "a rule name has letters, digits, '.', '_' and '-'"),
  /** Settings of the job (checkpoints, parallelism); default: the lowest version's. Never change maxParallelism of a running rule. */
  settings: z.record(z.string(), z.unknown()).optional(),
  branches: z
    .array(z.object({ version: z.number().int().positive(), mode: branchModeSchema, pipeline: z.unknown() }))
    .min(1, "a rule job runs at least one version"),
});
export type RuleJobSpec = z.infer<typeof ruleJobSpecSchema>;

/** One sink node of one branch: the routed sink's enforcing and shadow outputs. */
export interface BranchSinkRoute {
  /** The sink's node id in the rule job (namespaced). */
  nodeId: string;
  version: number;
  /** What the shadow output changes in the sink's params (its topic, or its file): the rest, and the enforcing output, are the node's own. */
  shadowOverrides: Record<string, unknown>;
  /** A file sink's enforcement file (its `path`): branches naming the same one share one writer of it (./routing.ts). */
  enforcementFile?: string;
}

export interface ComposedRuleJob {
  doc: PipelineDocument;
  routes: BranchSinkRoute[];
  /** Each version's mode at the job's first start (a restore takes the checkpoint's). */
  initialModes: Map<number, BranchMode>;
  /** Version → its node ids in the job (original id → namespaced id). */
  nodeIds: Map<number, Map<string, string>>;
}

export type ComposeResult = { ok: true; job: ComposedRuleJob; warnings: string[] } | { ok: false; problems: string[] };

/** Node ids allow letters, digits, `_` and `-`: the version prefix keeps branches apart (`v1-x` and `v12-x` cannot meet: ids start with a letter). */
export function branchNodeId(version: number, nodeId: string): string {
  return `v${version}-${nodeId}`;
}

function shadowOverridesOf(rule: string, version: number, node: { id: string; type: string; params: Record<string, unknown> }, kafkaSinks: number): Record<string, unknown> {
  if (node.type === "sink.kafka") return { topic: shadowTopic(rule, node.id, kafkaSinks) };
  if (node.type === "sink.file") return { path: shadowFilePath(rule, version, node.id, String(node.params.path ?? "")) };
  return {};
}

const sameSource = (a: { type: string; params: unknown }, b: { type: string; params: unknown }) => a.type === b.type && JSON.stringify(a.params) === JSON.stringify(b.params);

/** Builds the rule job's pipeline from its versions; problems name the version and the node. */
export function composeRuleJob(input: unknown, baseDir: string): ComposeResult {
  const parsed = ruleJobSpecSchema.safeParse(input);
  if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((i) => `rule.${i.path.join(".")}: ${i.message}`) };
  const spec = parsed.data;
  const problems: string[] = [];
  const warnings: string[] = [];
  const branches = [...spec.branches].sort((a, b) => a.version - b.version);
  const seen = new Set<number>();
  for (const b of branches) {
    if (seen.has(b.version)) problems.push(`version ${b.version} is listed twice`);
    seen.add(b.version);
  }
  const enforcing = branches.filter((b) => b.mode === "enforcing");
  if (enforcing.length > 1) problems.push(`versions ${enforcing.map((b) => b.version).join(" and ")} are both enforcing: at most one version of a rule enforces at a time`);
  const docs: { version: number; doc: PipelineDocument }[] = [];
  for (const b of branches) {
    const checked = checkPipeline(b.pipeline, `version ${b.version}`, baseDir);
    if (!checked.ok) problems.push(...checked.problems);
    else {
      docs.push({ version: b.version, doc: checked.doc });
      warnings.push(...checked.warnings);
    }
  }
  if (problems.length > 0) return { ok: false, problems };

  const nodes: PipelineDocument["nodes"] = [];
  const edges: PipelineDocument["edges"] = [];
  const shared = new Map<string, { type: string; params: unknown }>();
  const routes: BranchSinkRoute[] = [];
  const nodeIds = new Map<number, Map<string, string>>();
  for (const { version, doc } of docs) {
    const ids = new Map<string, string>();
    nodeIds.set(version, ids);
    const kafkaSinks = doc.nodes.filter((n) => n.type === "sink.kafka").length;
    for (const node of doc.nodes) {
      if (node.type.startsWith("source.")) {
        const existing = shared.get(node.id);
        if (!existing) {
          shared.set(node.id, node);
          nodes.push(node);
          ids.set(node.id, node.id);
          continue;
        }
        if (sameSource(existing, node)) {
          ids.set(node.id, node.id);
          continue;
        }
        warnings.push(`version ${version}: source "${node.id}" differs from the other versions' (type or params): it reads on its own as "${branchNodeId(version, node.id)}"`);
      }
      const id = branchNodeId(version, node.id);
      if (id.length > 64) {
        problems.push(`version ${version}: node "${node.id}": its id in the rule job ("${id}") is longer than 64 characters; shorten the node id`);
        continue;
      }
      ids.set(node.id, id);
      nodes.push({ ...node, id });
      if (node.type.startsWith("sink.")) {
        const written = node.type === "sink.file" && typeof node.params.path === "string" ? relativePathInFolder(node.params.path) : undefined;
        const file = written === undefined ? undefined : written.ok ? written.normalized : String(node.params.path);
        routes.push({ nodeId: id, version, shadowOverrides: shadowOverridesOf(spec.name, version, node, kafkaSinks), ...(file !== undefined ? { enforcementFile: file } : {}) });
      }
    }
    const end = (e: string) => {
      const i = e.indexOf(":");
      const nodeId = i < 0 ? e : e.slice(0, i);
      return (ids.get(nodeId) ?? nodeId) + (i < 0 ? "" : e.slice(i));
    };
    for (const e of doc.edges) edges.push({ from: end(e.from), to: end(e.to) });
    if (!doc.nodes.some((n) => n.type.startsWith("sink."))) problems.push(`version ${version} has no sink: a rule version without output cannot be shadowed or enforced`);
  }
  if (problems.length > 0) return { ok: false, problems };
  const base = docs[0]!.doc;
  const composed = {
    format: base.format,
    name: spec.name,
    description: `rule ${spec.name}: versions ${docs.map((d) => `${d.version}`).join(", ")}`,
    settings: { ...base.settings, deadLetterTopic: base.settings.deadLetterTopic ?? `${spec.name}.dlq`, ...spec.settings },
    nodes,
    edges,
  };
  // Its versions' sinks share their outputs through the routing (one writer each: ./outputs.ts); each version was checked alone above.
  const checked = checkPipeline(composed, `rule job ${spec.name}`, baseDir, { sharedOutputs: true });
  if (!checked.ok) return { ok: false, problems: checked.problems };
  return { ok: true, job: { doc: checked.doc, routes, initialModes: new Map(branches.map((b) => [b.version, b.mode])), nodeIds }, warnings };
}

/** A problem about a rule job's node, in the terms of the version its author edits: `node "v4-velocity"` → `node "velocity" … (version 4)`. */
export function inVersionTerms(problem: string): string {
  const versions = new Set<string>();
  const text = problem.replace(/node "v(\d+)-([A-Za-z][A-Za-z0-9_-]*)"/g, (_m, v: string, id: string) => {
    versions.add(v);
    return `node "${id}"`;
  });
  return versions.size === 0 ? text : `${text} (version ${[...versions].join(", ")})`;
}
