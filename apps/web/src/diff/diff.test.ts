import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { deployPlan, deployedVersion } from "./deploy-plan";
import { canonical, countChanges, describeChangeCount, diffDecorations, diffPipelines, edgeKey, formatValue, valueChanges } from "./diff";

const v1: PipelineDocumentInput = {
  format: PIPELINE_FORMAT,
  name: "velocity-rule",
  nodes: [
    { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" }, position: { x: 0, y: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 300, y: 0 } },
    { id: "vel", type: "velocity", params: { threshold: 5, windowMs: "2m" }, position: { x: 600, y: 0 } },
    { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 900, y: 0 } },
    { id: "late", type: "sink.kafka", params: { topic: "late" }, position: { x: 900, y: 200 } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
    { from: "vel:late", to: "late" },
  ],
};

function v2(): PipelineDocumentInput {
  return {
    ...v1,
    nodes: [
      // moved only: not a change
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" }, position: { x: 10, y: 40 } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 300, y: 0 } },
      { id: "vel", type: "velocity", label: "Card testing", params: { threshold: 3, windowMs: "2m", idField: "txId" }, position: { x: 600, y: 0 } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 900, y: 0 } },
      { id: "dedupAlerts", type: "dedup", params: { field: "event.txId", ttlMs: "1h" } },
    ],
    edges: [
      { from: "payments:out", to: "byCard:in" }, // same edge, explicit ports
      { from: "byCard", to: "vel" },
      { from: "vel", to: "dedupAlerts" },
      { from: "dedupAlerts", to: "alerts" },
    ],
  };
}

describe("diffPipelines", () => {
  it("finds added, removed and changed nodes, with param-level changes", () => {
    const d = diffPipelines(v1, v2());
    expect(d.addedNodes.map((n) => n.id)).toEqual(["dedupAlerts"]);
    expect(d.removedNodes.map((n) => n.id)).toEqual(["late"]);
    expect(d.changedNodes).toEqual([
      {
        id: "vel",
        type: "velocity",
        changes: [
          { kind: "label", path: "label", before: undefined, after: "Card testing" },
          { kind: "param", path: "idField", before: undefined, after: "txId" },
          { kind: "param", path: "threshold", before: 5, after: 3 },
        ],
      },
    ]);
    expect(d.unchangedNodeIds.sort()).toEqual(["alerts", "byCard", "payments"]);
  });

  it("matches edges by their ends with explicit ports", () => {
    const d = diffPipelines(v1, v2());
    expect(d.addedEdges.map((e) => e.key)).toEqual(["vel:out->dedupAlerts:in", "dedupAlerts:out->alerts:in"]);
    expect(d.removedEdges.map((e) => `${e.from}->${e.to}`)).toEqual(["vel->alerts", "vel:late->late"]);
    expect(edgeKey({ from: "a", to: "b" })).toBe(edgeKey({ from: "a:out", to: "b:in" }));
    expect(edgeKey({ from: "a:late", to: "b" })).not.toBe(edgeKey({ from: "a", to: "b" }));
  });

  it("is empty for the same document, whatever the key order and positions", () => {
    const reordered = JSON.parse(JSON.stringify(v1)) as PipelineDocumentInput;
    reordered.nodes = reordered.nodes.map((n) => ({ position: { x: 1, y: 1 }, params: n.params, type: n.type, id: n.id }));
    const d = diffPipelines(v1, reordered);
    expect(countChanges(d)).toBe(0);
  });

  it("recurses into object params and compares arrays whole", () => {
    expect(valueChanges({ assignments: { risk: "a", score: "b" } }, { assignments: { risk: "a", score: "c", extra: "d" } })).toEqual([
      { path: "assignments.extra", before: undefined, after: "d" },
      { path: "assignments.score", before: "b", after: "c" },
    ]);
    expect(valueChanges({ fields: ["a", "b"] }, { fields: ["a", "c"] })).toEqual([{ path: "fields", before: ["a", "b"], after: ["a", "c"] }]);
    expect(valueChanges({ windowMs: "2m" }, { windowMs: 120000 })).toEqual([{ path: "windowMs", before: "2m", after: 120000 }]);
  });

  it("reports a type change and settings changes", () => {
    const b: PipelineDocumentInput = {
      ...v1,
      settings: { checkpointIntervalMs: 10_000 },
      nodes: v1.nodes.map((n) => (n.id === "alerts" ? { ...n, type: "sink.file", params: { path: "a.jsonl" } } : n)),
    };
    const d = diffPipelines({ ...v1, settings: { checkpointIntervalMs: 60_000 } }, b);
    expect(d.changedNodes[0]?.changes.map((c) => c.path)).toEqual(["type", "path", "topic"]);
    expect(d.settings).toEqual([{ path: "settings.checkpointIntervalMs", before: 60_000, after: 10_000 }]);
    expect(countChanges(d)).toBe(2);
  });

  it("counts one change per node and edge", () => {
    expect(countChanges(diffPipelines(v1, v2()))).toBe(1 + 1 + 1 + 2 + 2);
    expect(describeChangeCount(0)).toBe("no changes");
    expect(describeChangeCount(1)).toBe("1 change");
    expect(describeChangeCount(7)).toBe("7 changes");
  });
});

describe("diffDecorations", () => {
  it("merges both graphs and gives each node and edge its status", () => {
    const deco = diffDecorations(v1, v2());
    expect(deco.merged.nodes.map((n) => n.id)).toEqual(["payments", "byCard", "vel", "alerts", "dedupAlerts", "late"]);
    expect(deco.nodes).toEqual({ payments: "unchanged", byCard: "unchanged", alerts: "unchanged", vel: "changed", dedupAlerts: "added", late: "removed" });
    expect(deco.edges).toEqual({
      "payments:out->byCard:in": "unchanged",
      "byCard->vel": "unchanged",
      "vel->dedupAlerts": "added",
      "dedupAlerts->alerts": "added",
      "vel->alerts": "removed",
      "vel:late->late": "removed",
    });
    // removed nodes keep the position they had
    expect(deco.merged.nodes.find((n) => n.id === "late")?.position).toEqual({ x: 900, y: 200 });
    expect(deco.changes.vel?.map((c) => c.path)).toEqual(["label", "idField", "threshold"]);
    expect(deco.className("added")).toBe("kf-diff kf-diff--added");
  });
});

describe("deployPlan", () => {
  const versions = [
    { id: "ver-2", number: 2, graph: v2() },
    { id: "ver-1", number: 1, graph: v1 },
  ];

  it("finds the running version and counts what a deploy ships", () => {
    const deployments = [
      { versionId: "ver-2", status: "failed", createdAt: new Date("2026-01-03") },
      { versionId: "ver-1", status: "running", createdAt: new Date("2026-01-02") },
      { versionId: "ver-2", status: "stopped", createdAt: new Date("2026-01-01") },
    ];
    const deployed = deployedVersion(versions, deployments);
    expect(deployed?.number).toBe(1);
    const plan = deployPlan(v2(), deployed);
    expect(plan.label).toBe("Deploy (7 changes)");
    expect(plan.changedNodeIds).toEqual(["dedupAlerts", "vel"]);
    expect(plan.removedNodeIds).toEqual(["late"]);
  });

  it("says when nothing changed, and when nothing was deployed yet", () => {
    expect(deployPlan(v1, versions[1]).label).toBe("Deploy (no changes)");
    const first = deployPlan(v1, deployedVersion(versions, []));
    expect(first.label).toBe("Deploy (first deployment)");
    expect(first.deployed).toBeUndefined();
  });
});

describe("formatting", () => {
  it("shows values on one line", () => {
    expect(formatValue(undefined)).toBe("(none)");
    expect(formatValue("2m")).toBe('"2m"');
    expect(formatValue({ b: 1, a: [1, 2] })).toBe('{"a":[1,2],"b":1}');
    expect(formatValue("x".repeat(200)).length).toBe(80);
    expect(canonical({ b: undefined, a: 1 })).toBe('{"a":1}');
  });
});
