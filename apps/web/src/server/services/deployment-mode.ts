// The one place a deployment's mode changes what it writes. In shadow mode every Kafka sink of the
// rule writes to `<rule>.shadow` (`<rule>.shadow.<node>` when the rule has several), never to the
// enforcement topic that the authorisation gateway consumes, each file sink to a file of its own
// (`<rule>.shadow.<node>.jsonl` beside the enforcing one), and its dead letters go to a topic of
// their own; everything else (sources, state, parameters) is untouched, so shadow and enforcing
// decisions come from the same graph.
import type { DeploymentMode } from "@keyflow/db";
import { shadowTopic, type PipelineDocument } from "@keyflow/operators";

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

export function pipelineForMode(pipeline: PipelineDocument, mode: DeploymentMode): PipelineDocument {
  if (mode !== "shadow") return pipeline;
  const kafkaSinks = pipeline.nodes.filter((node) => node.type === "sink.kafka").length;
  return {
    ...pipeline,
    settings: { ...pipeline.settings, deadLetterTopic: shadowDeadLetterTopic(pipeline) },
    nodes: pipeline.nodes.map((node) => {
      if (node.type === "sink.kafka") return { ...node, params: { ...node.params, topic: shadowTopic(pipeline.name, node.id, kafkaSinks) } };
      if (node.type === "sink.file") return { ...node, params: { ...node.params, path: shadowFile(pipeline.name, node.id, node.params.path) } };
      return node;
    }),
  };
}

/** A shadow deployment's file sink: a file of its own beside the enforcing one, which keeps one writer. */
function shadowFile(rule: string, nodeId: string, enforcing: unknown): string {
  const p = typeof enforcing === "string" ? enforcing : "";
  return `${p.slice(0, p.lastIndexOf("/") + 1)}${rule}.shadow.${nodeId}.jsonl`;
}
