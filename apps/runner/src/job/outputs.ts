// What a job reads and writes on the runner, checked before it starts: its files inside the data
// folder (../io/confine.ts), and its outputs (files by their real path, Kafka topics, its dead
// letters) with one writer each, within the job and across the runner's running jobs. A rule job's
// branch sinks share the enforcement output and the shadow topic through the job's routing
// (./routing.ts): within the job, the routing is their one writer.
import { deadLetterOutput, describeOutput, getOperatorSpec, sinkOutput, type PipelineDocument, type PipelineOutput } from "@keyflow/operators";
import { confinePath } from "../io/confine";
import type { ComposedRuleJob } from "./rule-job";

export interface JobOutput {
  /** `file:<real path>` or `topic:<name>`. */
  key: string;
  /** `file "out/alerts.jsonl"`, `topic "alerts"`. */
  what: string;
  /** Who writes it: `node "alerts"`, `node "v2-alerts" (shadow)`, `the dead-letter output`. */
  node: string;
  /** Outputs with the same writer are one writer's: a node, or a rule job's routing of one output. */
  writer: string;
}

/** Two writers of one output (HTTP 409): names both jobs and nodes. */
export class OutputConflictError extends Error {
  override name = "OutputConflictError";
}

const data = (dataDir: string) => ({ root: dataDir, folder: "data folder" });

/** Every file param of the job (sources' too), confined to the data folder; throws PathOutsideFolderError naming the node and param. */
export function confineJobFiles(doc: PipelineDocument, dataDir: string): void {
  for (const node of doc.nodes) {
    for (const param of getOperatorSpec(node.type)?.filePaths ?? []) {
      const p = node.params[param];
      if (typeof p === "string") confinePath(p, `node "${node.id}": param "${param}"`, data(dataDir));
    }
  }
}

/** The job's outputs, files resolved in the data folder (throws PathOutsideFolderError for one outside it). */
export function jobOutputs(doc: PipelineDocument, dataDir: string, rule?: Pick<ComposedRuleJob, "routes">): JobOutput[] {
  const keyOf = (o: PipelineOutput, what: string) => (o.kind === "topic" ? `topic:${o.topic}` : `file:${confinePath(o.path, what, data(dataDir))}`);
  const routes = new Map((rule?.routes ?? []).map((r) => [r.nodeId, r]));
  const outputs: JobOutput[] = [];
  for (const node of doc.nodes) {
    const spec = getOperatorSpec(node.type);
    const own = sinkOutput(spec, node.params);
    if (!own || !spec?.writes) continue;
    const what = `node "${node.id}": param "${spec.writes.param}"`;
    const key = keyOf(own, what);
    const route = routes.get(node.id);
    if (!route) {
      outputs.push({ key, what: describeOutput(own), node: `node "${node.id}"`, writer: node.id });
      continue;
    }
    outputs.push({ key, what: describeOutput(own), node: `node "${node.id}" (enforcing)`, writer: `enforcing ${key}` });
    const shadow = sinkOutput(spec, { ...node.params, ...route.shadowOverrides });
    if (shadow) {
      const shadowKey = keyOf(shadow, what);
      // Shadow versions share `<rule>.shadow` (their alerts carry their version); shadow files are one per version and node.
      outputs.push({ key: shadowKey, what: describeOutput(shadow), node: `node "${node.id}" (shadow)`, writer: shadow.kind === "topic" ? `shadow ${shadowKey}` : `${node.id} shadow` });
    }
  }
  const dlq = deadLetterOutput(doc);
  outputs.push({ key: keyOf(dlq, "the dead-letter file"), what: describeOutput(dlq), node: "the dead-letter output", writer: "dead letters" });
  return outputs;
}

/** Outputs of the job that two of its writers write (one problem per pair). */
export function sharedWithinJob(outputs: readonly JobOutput[]): string[] {
  const first = new Map<string, JobOutput>();
  const problems: string[] = [];
  for (const o of outputs) {
    const other = first.get(o.key);
    if (!other) first.set(o.key, o);
    else if (other.writer !== o.writer) problems.push(`${o.node} writes ${o.what}, which ${other.node} writes too — one writer per output`);
  }
  return problems;
}

/** Why job `id` may not start beside `running` (a running job writing one of its outputs), or undefined. */
export function conflictWithRunning(id: string, outputs: readonly JobOutput[], running: readonly { id: string; outputs: readonly JobOutput[] }[]): string | undefined {
  for (const other of running) {
    if (other.id === id) continue;
    const theirs = new Map(other.outputs.map((o) => [o.key, o]));
    for (const o of outputs) {
      const t = theirs.get(o.key);
      if (t) return `job "${id}": ${o.node} writes ${o.what}, which ${t.node} of running job "${other.id}" writes too — one writer per output: stop job "${other.id}" first, or give the sink its own output`;
    }
  }
  return undefined;
}
