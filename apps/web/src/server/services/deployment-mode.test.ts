import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, pipelineDocumentSchema, validatePipeline } from "@keyflow/operators";
import { pipelineForMode } from "./deployment-mode";

const rule = pipelineDocumentSchema.parse({
  format: PIPELINE_FORMAT,
  name: "card-velocity",
  nodes: [
    { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
    { id: "big", type: "filter", params: { expression: "amount > 100" } },
    { id: "alerts", type: "sink.kafka", params: { topic: "enforcement.alerts", deliveryGuarantee: "exactly-once" } },
    { id: "audit", type: "sink.kafka", params: { topic: "enforcement.audit" } },
  ],
  edges: [
    { from: "payments", to: "big" },
    { from: "big", to: "alerts" },
    { from: "big", to: "audit" },
  ],
});

const kafkaTopics = (doc: typeof rule) => doc.nodes.filter((n) => n.type === "sink.kafka").map((n) => (n.params as { topic: string }).topic);

describe("pipelineForMode", () => {
  it("sends every Kafka sink of a shadow deployment to <rule>.shadow…, never to an enforcement topic", () => {
    const shadow = pipelineForMode(rule, "shadow");
    expect(kafkaTopics(shadow)).toEqual(["card-velocity.shadow.alerts", "card-velocity.shadow.audit"]);
    for (const topic of kafkaTopics(rule)) expect(kafkaTopics(shadow)).not.toContain(topic);
    // Only the topic changes: same nodes, same edges, other params kept, still valid.
    expect(shadow.edges).toEqual(rule.edges);
    expect(shadow.nodes.map((n) => n.id)).toEqual(rule.nodes.map((n) => n.id));
    expect(shadow.nodes[2]?.params).toMatchObject({ deliveryGuarantee: "exactly-once" });
    expect(validatePipeline(shadow).ok).toBe(true);
    // The stored document is not touched.
    expect(kafkaTopics(rule)).toEqual(["enforcement.alerts", "enforcement.audit"]);
  });

  it("uses <rule>.shadow itself for a rule with one Kafka sink", () => {
    const one = { ...rule, nodes: rule.nodes.filter((n) => n.id !== "audit"), edges: rule.edges.filter((e) => e.to !== "audit") };
    expect(kafkaTopics(pipelineForMode(one, "shadow"))).toEqual(["card-velocity.shadow"]);
  });

  it("gives a shadow deployment its own dead-letter topic, so it never shares one with the enforcing version", () => {
    expect(pipelineForMode(rule, "shadow").settings.deadLetterTopic).toBe("card-velocity.dlq.shadow");
    const named = { ...rule, settings: { ...rule.settings, deadLetterTopic: "fraud.dlq" } };
    expect(pipelineForMode(named, "shadow").settings.deadLetterTopic).toBe("fraud.dlq.shadow");
    expect(pipelineForMode(named, "enforcing").settings.deadLetterTopic).toBe("fraud.dlq");
  });

  it("gives a shadow deployment's file sinks files of their own, so the enforcing file keeps one writer", () => {
    const files = { ...rule, nodes: [...rule.nodes.slice(0, 2), { id: "alerts", type: "sink.file", params: { path: "fraud/alerts.jsonl" } }, { id: "audit", type: "sink.file", params: { path: "audit.jsonl" } }] };
    const shadow = pipelineForMode(files, "shadow", { version: 3 });
    expect(shadow.nodes.slice(2).map((n) => n.params.path)).toEqual(["fraud/card-velocity.shadow.v3.alerts.jsonl", "card-velocity.shadow.v3.audit.jsonl"]);
    expect(validatePipeline(shadow).ok).toBe(true);
  });

  it("leaves an enforcing deployment as it is", () => {
    expect(pipelineForMode(rule, "enforcing")).toBe(rule);
  });
});
