import { describe, expect, it } from "vitest";
import { documentToFlow } from "./flow";
import { testCatalog, velocityDocument } from "./fixtures";
import { estimateNodeSize, layoutGraph } from "./layout";

describe("layoutGraph", () => {
  it("places every node, left to right along the flow, without overlaps", async () => {
    const { nodes, edges } = documentToFlow(velocityDocument(false), testCatalog);
    const positions = await layoutGraph(nodes, edges);
    expect([...positions.keys()].sort()).toEqual(nodes.map((n) => n.id).sort());

    const x = (id: string) => positions.get(id)?.x ?? Number.NaN;
    expect(x("payments")).toBeLessThan(x("byCard"));
    expect(x("byCard")).toBeLessThan(x("vel"));
    expect(x("vel")).toBeLessThan(x("alerts"));
    expect(x("vel")).toBeLessThan(x("lateSink"));

    const boxes = nodes.map((n) => ({ id: n.id, ...positions.get(n.id), ...estimateNodeSize(n.data) }));
    for (const a of boxes) {
      for (const b of boxes) {
        if (a.id >= b.id) continue;
        const apart = (a.x ?? 0) + a.width <= (b.x ?? 0) || (b.x ?? 0) + b.width <= (a.x ?? 0) || (a.y ?? 0) + a.height <= (b.y ?? 0) || (b.y ?? 0) + b.height <= (a.y ?? 0);
        expect(apart, `${a.id} overlaps ${b.id}`).toBe(true);
      }
    }
  });

  it("puts the main output's target above the side output's target", async () => {
    const { nodes, edges } = documentToFlow(velocityDocument(false), testCatalog);
    const positions = await layoutGraph(nodes, edges);
    expect(positions.get("alerts")?.y ?? 0).toBeLessThan(positions.get("lateSink")?.y ?? 0);
  });

  it("ignores edges to nodes that do not exist", async () => {
    const doc = velocityDocument(false);
    doc.edges = [...(doc.edges ?? []), { from: "vel", to: "ghost" }];
    const { nodes, edges } = documentToFlow(doc, testCatalog);
    await expect(layoutGraph(nodes, edges)).resolves.toHaveProperty("size", 6);
  });
});

describe("estimateNodeSize", () => {
  it("grows with params and port rows", () => {
    const base = estimateNodeSize({ params: [], inputs: [], outputs: [] });
    const bigger = estimateNodeSize({ params: [{ name: "a", value: "1" }], inputs: [], outputs: [{ id: "out", label: "o", side: false, declared: true }] });
    expect(bigger.width).toBe(base.width);
    expect(bigger.height).toBeGreaterThan(base.height);
  });
});
