// The one place a deployment's mode changes what it writes. In shadow mode every Kafka sink of the
// rule writes to `<rule>.shadow` (`<rule>.shadow.<node>` when the rule has several), never to the
// enforcement topic that the authorisation gateway consumes; everything else (sources, state,
// parameters) is untouched, so shadow and enforcing decisions come from the same graph.
import type { DeploymentMode } from "@keyflow/db";
import type { PipelineDocument } from "@keyflow/operators";

export function shadowTopic(rule: string, nodeId: string, kafkaSinks: number): string {
  return kafkaSinks === 1 ? `${rule}.shadow` : `${rule}.shadow.${nodeId}`;
}

export function pipelineForMode(pipeline: PipelineDocument, mode: DeploymentMode): PipelineDocument {
  if (mode !== "shadow") return pipeline;
  const kafkaSinks = pipeline.nodes.filter((node) => node.type === "sink.kafka").length;
  return {
    ...pipeline,
    nodes: pipeline.nodes.map((node) => (node.type === "sink.kafka" ? { ...node, params: { ...node.params, topic: shadowTopic(pipeline.name, node.id, kafkaSinks) } } : node)),
  };
}
