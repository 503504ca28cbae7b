// The one place a deployment's mode changes what it writes. In shadow mode every Kafka sink of the
// rule writes to `<rule>.shadow` (`<rule>.shadow.<node>` when the rule has several), never to the
// enforcement topic that the authorisation gateway consumes, each file sink to a shadow file of its
// own, and its dead letters go to a topic of their own; everything else (sources, state, parameters)
// is untouched, so shadow and enforcing decisions come from the same graph. A `test` deployment of a
// version without an approved promotion is rewritten the same way: only shadow writes for an
// unapproved version, whatever the mode.
import type { DeploymentMode, PrismaClient } from "@keyflow/db";
import { shadowFilePath, shadowTopic, type PipelineDocument } from "@keyflow/operators";

/**
 * Where a shadow deployment's dead letters go. Without it, a shadow and an enforcing version of
 * one rule running side by side would both write `<rule>.dlq` (the runner's default), and nobody
 * could tell which version refused a record.
 */
export function shadowDeadLetterTopic(pipeline: PipelineDocument): string {
  return `${pipeline.settings.deadLetterTopic ?? `${pipeline.name}.dlq`}.shadow`;
}

/** The alert topics a deployment of `pipeline` in `mode` writes, by sink node id. */
export function alertTopics(pipeline: PipelineDocument, mode: DeploymentMode): { nodeId: string; topic: string }[] {
  return pipelineForMode(pipeline, mode)
    .nodes.filter((node) => node.type === "sink.kafka")
    .map((node) => ({ nodeId: node.id, topic: String((node.params as { topic?: unknown }).topic) }));
}

/** What decides a test deployment's outputs: whether its version's graph has an approved promotion, and its number (shadow file names). */
export interface ModeContext {
  approved: boolean;
  version: number;
}

/** Whether a deployment in `mode` writes only shadow outputs (a test deployment does unless its version is approved; unknown approval counts as none). */
export function writesShadow(mode: DeploymentMode, context?: Partial<ModeContext>): boolean {
  return mode === "shadow" || (mode === "test" && context?.approved !== true);
}

export function pipelineForMode(pipeline: PipelineDocument, mode: DeploymentMode, context?: Partial<ModeContext>): PipelineDocument {
  if (!writesShadow(mode, context)) return pipeline;
  const kafkaSinks = pipeline.nodes.filter((node) => node.type === "sink.kafka").length;
  const shadowParams = (node: PipelineDocument["nodes"][number]) => {
    if (node.type === "sink.kafka") return { ...node.params, topic: shadowTopic(pipeline.name, node.id, kafkaSinks) };
    if (node.type === "sink.file") return { ...node.params, path: shadowFilePath(pipeline.name, context?.version ?? 0, node.id, String((node.params as { path?: unknown }).path ?? "")) };
    return null;
  };
  return {
    ...pipeline,
    settings: { ...pipeline.settings, deadLetterTopic: shadowDeadLetterTopic(pipeline) },
    nodes: pipeline.nodes.map((node) => {
      const params = shadowParams(node);
      return params ? { ...node, params } : node;
    }),
  };
}

/** Whether the version's exact graph has an approved promotion (used or not). */
export async function hasApprovedGraph(prisma: Pick<PrismaClient, "promotionRequest">, versionId: string, graphHash: string): Promise<boolean> {
  return (await prisma.promotionRequest.count({ where: { versionId, graphHash, status: "approved" } })) > 0;
}
