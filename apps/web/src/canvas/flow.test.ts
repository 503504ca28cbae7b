import { describe, expect, it } from "vitest";
import { documentToFlow, edgeId, missingPositions, summarizeParams } from "./flow";
import { testCatalog, velocityDocument } from "./fixtures";

describe("documentToFlow", () => {
  const { nodes, edges } = documentToFlow(velocityDocument(true), testCatalog);

  it("draws one operator node per document node, at the document's position", () => {
    expect(nodes.map((n) => n.id)).toEqual(["payments", "limits", "byCard", "vel", "alerts", "lateSink"]);
    expect(nodes.every((n) => n.type === "operator")).toBe(true);
    expect(nodes.find((n) => n.id === "byCard")?.position).toEqual({ x: 320, y: 0 });
  });

  it("takes title, category, statefulness and ports from the catalog, and the label from the node", () => {
    const vel = nodes.find((n) => n.id === "vel")?.data;
    expect(vel).toMatchObject({ nodeId: "vel", type: "velocity", title: "Velocity check", label: "5 payments in 10m", category: "pattern", known: true, stateful: true });
    expect(vel?.inputs.map((p) => p.id)).toEqual(["in", "reference"]);
    expect(vel?.outputs.map((p) => [p.id, p.side])).toEqual([
      ["out", false],
      ["late", true],
      ["errors", true],
    ]);
  });

  it("connects main ports as out → in and named ports by their id", () => {
    const byId = new Map(edges.map((e) => [e.id, e]));
    expect(byId.get(edgeId("byCard", "vel"))).toMatchObject({ source: "byCard", sourceHandle: "out", target: "vel", targetHandle: "in" });
    expect(byId.get(edgeId("limits", "vel:reference"))).toMatchObject({ source: "limits", sourceHandle: "out", target: "vel", targetHandle: "reference" });
    expect(byId.get(edgeId("vel:late", "lateSink"))).toMatchObject({ source: "vel", sourceHandle: "late", target: "lateSink", targetHandle: "in" });
  });

  it("marks edges that leave a side output", () => {
    const late = edges.find((e) => e.sourceHandle === "late");
    expect(late?.data?.side).toBe(true);
    expect(late?.className).toBe("kf-edge-side");
    expect(edges.filter((e) => e.data?.side)).toHaveLength(1);
  });

  it("gives every edge a unique, stable id", () => {
    expect(new Set(edges.map((e) => e.id)).size).toBe(edges.length);
    expect(documentToFlow(velocityDocument(true), testCatalog).edges.map((e) => e.id)).toEqual(edges.map((e) => e.id));
  });

  it("still draws an operator the catalog does not know, with the ports its edges use", () => {
    const doc = velocityDocument(true);
    doc.nodes.push({ id: "mystery", type: "acme.scorer", params: {}, position: { x: 0, y: 0 } });
    doc.edges = [...(doc.edges ?? []), { from: "byCard", to: "mystery:features" }, { from: "mystery:scores", to: "alerts" }];
    const mystery = documentToFlow(doc, testCatalog).nodes.find((n) => n.id === "mystery")?.data;
    expect(mystery).toMatchObject({ title: "acme.scorer", category: "unknown", known: false });
    expect(mystery?.inputs).toEqual([{ id: "features", label: "features", side: false, declared: false }]);
    expect(mystery?.outputs).toEqual([{ id: "scores", label: "scores", side: false, declared: false }]);
  });

  it("flags a port an edge names that the operator does not declare", () => {
    const doc = velocityDocument(true);
    doc.edges = [...(doc.edges ?? []), { from: "vel:lat", to: "lateSink" }];
    const vel = documentToFlow(doc, testCatalog).nodes.find((n) => n.id === "vel")?.data;
    expect(vel?.outputs.find((p) => p.id === "lat")).toEqual({ id: "lat", label: "lat", side: false, declared: false });
  });

  it("uses given positions before the document's", () => {
    const moved = documentToFlow(velocityDocument(true), testCatalog, { positions: new Map([["vel", { x: 1, y: 2 }]]) });
    expect(moved.nodes.find((n) => n.id === "vel")?.position).toEqual({ x: 1, y: 2 });
    expect(moved.nodes.find((n) => n.id === "alerts")?.position).toEqual({ x: 960, y: 0 });
  });
});

describe("documentToFlow with issues", () => {
  it("pins each node's issues on it and leaves the others alone", () => {
    const issues = new Map([["vel", { errors: 1, warnings: 0, messages: ['node "vel": param "count" must be positive'] }]]);
    const { nodes } = documentToFlow(velocityDocument(true), testCatalog, { issues });
    expect(nodes.find((n) => n.id === "vel")?.data.issues).toEqual(issues.get("vel"));
    expect(nodes.find((n) => n.id === "alerts")?.data).not.toHaveProperty("issues");
  });
});

describe("missingPositions", () => {
  it("lists nodes without a position", () => {
    expect(missingPositions(velocityDocument(true))).toEqual([]);
    expect(missingPositions(velocityDocument(false))).toHaveLength(6);
  });
});

describe("summarizeParams", () => {
  it("shows scalars first, then nested values compactly, at most three", () => {
    expect(summarizeParams({ rules: [1, 2], count: 5, window: "10m", extra: true })).toEqual([
      { name: "count", value: "5" },
      { name: "window", value: "10m" },
      { name: "extra", value: "true" },
    ]);
    expect(summarizeParams({ rules: [1], by: { a: 1, b: 2 } })).toEqual([
      { name: "rules", value: "[1 item]" },
      { name: "by", value: "{a, b}" },
    ]);
  });

  it("truncates long values and skips null ones", () => {
    const [only] = summarizeParams({ expression: "amount > 50000 && country != 'SA' && channel == 'web'", none: null });
    expect(only?.value).toHaveLength(36);
    expect(only?.value.endsWith("…")).toBe(true);
    expect(summarizeParams({ none: null })).toEqual([]);
  });
});
