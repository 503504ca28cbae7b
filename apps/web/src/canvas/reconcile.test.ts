import { describe, expect, it } from "vitest";
import { documentToFlow, type OperatorFlowNode } from "./flow";
import { testCatalog, velocityDocument } from "./fixtures";
import { reconcileEdges, reconcileNodes } from "./reconcile";

const none = new Set<string>();

describe("reconcileNodes", () => {
  const drawn = documentToFlow(velocityDocument(true), testCatalog).nodes;

  it("keeps React Flow's measured size and the identity of unchanged nodes", () => {
    const first = reconcileNodes([], drawn, none).map((n) => ({ ...n, measured: { width: 224, height: 120 } }));
    const again = reconcileNodes(first, documentToFlow(velocityDocument(true), testCatalog).nodes, none);
    expect(again).toBe(first);
  });

  it("takes new data and positions from the document, and keeps what React Flow measured", () => {
    const first = reconcileNodes([], drawn, none).map((n) => ({ ...n, measured: { width: 224, height: 120 } }));
    const doc = velocityDocument(true);
    doc.nodes = doc.nodes.map((n) => (n.id === "vel" ? { ...n, label: "renamed", position: { x: 1, y: 2 } } : n));
    const next = reconcileNodes(first, documentToFlow(doc, testCatalog).nodes, none);
    const vel = next.find((n) => n.id === "vel") as OperatorFlowNode;
    expect(vel.data.label).toBe("renamed");
    expect(vel.position).toEqual({ x: 1, y: 2 });
    expect(vel.measured).toEqual({ width: 224, height: 120 });
    expect(next.find((n) => n.id === "alerts")).toBe(first.find((n) => n.id === "alerts"));
  });

  it("leaves a node being dragged where the pointer has it", () => {
    const first = reconcileNodes([], drawn, none).map((n) => (n.id === "vel" ? { ...n, dragging: true, position: { x: 5, y: 5 } } : n));
    const next = reconcileNodes(first, drawn, none);
    expect(next.find((n) => n.id === "vel")?.position).toEqual({ x: 5, y: 5 });
  });

  it("applies the selection and drops removed nodes", () => {
    const first = reconcileNodes([], drawn, none);
    const selected = reconcileNodes(first, drawn, new Set(["vel"]));
    expect(selected.filter((n) => n.selected).map((n) => n.id)).toEqual(["vel"]);
    const fewer = reconcileNodes(selected, drawn.slice(0, 2), new Set(["vel"]));
    expect(fewer.map((n) => n.id)).toEqual(["payments", "limits"]);
  });
});

describe("reconcileEdges", () => {
  const drawn = documentToFlow(velocityDocument(true), testCatalog).edges;
  it("keeps unchanged edges and applies the selection", () => {
    const first = reconcileEdges([], drawn, none);
    expect(reconcileEdges(first, documentToFlow(velocityDocument(true), testCatalog).edges, none)).toBe(first);
    const picked = reconcileEdges(first, drawn, new Set(["byCard->vel"]));
    expect(picked.filter((e) => e.selected).map((e) => e.id)).toEqual(["byCard->vel"]);
    expect(picked.find((e) => e.id === "vel->alerts")).toBe(first.find((e) => e.id === "vel->alerts"));
  });
});
