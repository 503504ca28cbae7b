import { describe, expect, it } from "vitest";
import { pipelineDocumentSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";
import {
  addNode,
  connect,
  copyNodes,
  edgeEnd,
  endPort,
  findFreePosition,
  idStem,
  moveNodes,
  nodeIdBase,
  parseClipboard,
  pasteClipboard,
  removeElements,
  setNodeMeta,
  setParam,
  uniqueNodeId,
} from "./graph-edit";

const empty = (): PipelineDocument => pipelineDocumentSchema.parse({ format: "keyflow.pipeline/v1", name: "t", nodes: [], edges: [] });

/** source → keyBy → velocity → sink, placed left to right. */
function velocityRule(): PipelineDocument {
  let doc = empty();
  for (const [type, x] of [
    ["source.file", 0],
    ["keyBy", 300],
    ["velocity", 600],
    ["sink.file", 900],
  ] as const) {
    doc = addNode(doc, { type, position: { x, y: 0 } }).doc;
  }
  for (const [from, to] of [
    ["sourceFile", "keyBy"],
    ["keyBy", "velocity"],
    ["velocity", "sinkFile"],
  ] as const) {
    const r = connect(doc, from, to);
    if (!r.ok) throw new Error(r.reason);
    doc = r.doc;
  }
  return doc;
}

describe("node ids", () => {
  it("are readable stems of the operator type", () => {
    expect(nodeIdBase("velocity")).toBe("velocity");
    expect(nodeIdBase("keyBy")).toBe("keyBy");
    expect(nodeIdBase("source.kafka")).toBe("sourceKafka");
    expect(nodeIdBase("window.tumbling")).toBe("windowTumbling");
    expect(nodeIdBase("enrich.broadcast")).toBe("enrichBroadcast");
    expect(nodeIdBase("3d.thing")).toBe("node3dThing");
  });

  it("are unique: velocity, velocity2, velocity3", () => {
    expect(uniqueNodeId("velocity", new Set())).toBe("velocity");
    expect(uniqueNodeId("velocity", new Set(["velocity"]))).toBe("velocity2");
    expect(uniqueNodeId("velocity", new Set(["velocity", "velocity2"]))).toBe("velocity3");
    expect(uniqueNodeId("velocity", new Set(["velocity", "velocity3"]))).toBe("velocity2");
  });

  it("keep their stem when copied", () => {
    expect(idStem("velocity2")).toBe("velocity");
    expect(idStem("velocity")).toBe("velocity");
    expect(idStem("v2")).toBe("v");
  });

  it("are valid document node ids", () => {
    let doc = empty();
    for (const type of ["source.kafka", "source.kafka", "window.tumbling", "process.custom"]) doc = addNode(doc, { type, position: { x: 0, y: 0 } }).doc;
    expect(doc.nodes.map((n) => n.id)).toEqual(["sourceKafka", "sourceKafka2", "windowTumbling", "processCustom"]);
    expect(pipelineDocumentSchema.safeParse(doc).success).toBe(true);
  });
});

describe("edge ends", () => {
  it("write main ports the short way and name the others", () => {
    expect(edgeEnd("vel", "out", "from")).toBe("vel");
    expect(edgeEnd("vel", "late", "from")).toBe("vel:late");
    expect(edgeEnd("vel", "in", "to")).toBe("vel");
    expect(edgeEnd("enrich", "reference", "to")).toBe("enrich:reference");
    expect(edgeEnd("vel", null, "to")).toBe("vel");
    expect(endPort("vel", "from")).toEqual({ nodeId: "vel", port: "out" });
    expect(endPort("vel:late", "from")).toEqual({ nodeId: "vel", port: "late" });
  });
});

describe("addNode / connect", () => {
  it("adds a node with empty params at a rounded position", () => {
    const { doc, nodeId } = addNode(empty(), { type: "velocity", position: { x: 10.6, y: -3.2 } });
    expect(nodeId).toBe("velocity");
    expect(doc.nodes).toEqual([{ id: "velocity", type: "velocity", params: {}, position: { x: 11, y: -3 } }]);
  });

  it("connects through the shared validator's canConnect and refuses what cannot work", () => {
    let doc = empty();
    doc = addNode(doc, { type: "source.file", position: { x: 0, y: 0 } }).doc;
    doc = addNode(doc, { type: "velocity", position: { x: 300, y: 0 } }).doc;
    const refused = connect(doc, "sourceFile", "velocity");
    expect(refused).toEqual({ ok: false, reason: expect.stringContaining("needs a keyed input — add a keyBy before it") });
    doc = addNode(doc, { type: "keyBy", position: { x: 150, y: 0 } }).doc;
    const a = connect(doc, "sourceFile", "keyBy");
    expect(a.ok).toBe(true);
    if (!a.ok) return;
    const b = connect(a.doc, "keyBy", "velocity");
    expect(b.ok && b.doc.edges).toEqual([
      { from: "sourceFile", to: "keyBy" },
      { from: "keyBy", to: "velocity" },
    ]);
    if (!b.ok) return;
    expect(connect(b.doc, "keyBy", "velocity")).toMatchObject({ ok: false, reason: expect.stringContaining("already connected") });
    expect(connect(b.doc, "velocity", "keyBy")).toMatchObject({ ok: false });
  });

  it("builds a rule the validator accepts once its params are set", () => {
    let doc = velocityRule();
    doc = setParam(doc, "sourceFile", ["path"], "payments.jsonl");
    doc = setParam(doc, "sourceFile", ["timestampField"], "ts");
    doc = setParam(doc, "keyBy", ["field"], "cardId");
    doc = setParam(doc, "velocity", ["threshold"], 3);
    doc = setParam(doc, "velocity", ["windowMs"], "10m");
    doc = setParam(doc, "sinkFile", ["path"], "alerts.jsonl");
    const result = validatePipeline(doc);
    expect(result.issues.filter((i) => i.severity === "error")).toEqual([]);
  });
});

describe("removeElements", () => {
  it("removes nodes with their edges, and edges by id", () => {
    const doc = velocityRule();
    const withoutKeyBy = removeElements(doc, { nodes: ["keyBy"] });
    expect(withoutKeyBy.nodes.map((n) => n.id)).toEqual(["sourceFile", "velocity", "sinkFile"]);
    expect(withoutKeyBy.edges).toEqual([{ from: "velocity", to: "sinkFile" }]);
    expect(removeElements(doc, { edges: ["keyBy->velocity"] }).edges).toHaveLength(2);
  });

  it("returns the same document when nothing matches", () => {
    const doc = velocityRule();
    expect(removeElements(doc, { nodes: ["nope"], edges: ["a->b"] })).toBe(doc);
    expect(removeElements(doc, {})).toBe(doc);
  });
});

describe("moveNodes / setParam / setNodeMeta", () => {
  it("moves nodes, and is a no-op when nothing moves", () => {
    const doc = velocityRule();
    expect(moveNodes(doc, new Map([["keyBy", { x: 300, y: 0 }]]))).toBe(doc);
    expect(moveNodes(doc, new Map([["keyBy", { x: 310.4, y: 20 }]])).nodes[1]?.position).toEqual({ x: 310, y: 20 });
  });

  it("sets, replaces and removes params, nested ones too", () => {
    let doc = addNode(empty(), { type: "window.tumbling", position: { x: 0, y: 0 } }).doc;
    doc = setParam(doc, "windowTumbling", ["sizeMs"], "1h");
    doc = setParam(doc, "windowTumbling", ["aggregate", "op"], "sum");
    doc = setParam(doc, "windowTumbling", ["aggregate", "field"], "amount");
    expect(doc.nodes[0]?.params).toEqual({ sizeMs: "1h", aggregate: { op: "sum", field: "amount" } });
    expect(setParam(doc, "windowTumbling", ["sizeMs"], "1h")).toBe(doc);
    doc = setParam(doc, "windowTumbling", ["aggregate", "field"], undefined);
    expect(doc.nodes[0]?.params).toEqual({ sizeMs: "1h", aggregate: { op: "sum" } });
    expect(setParam(doc, "windowTumbling", ["allowedLatenessMs"], undefined)).toBe(doc);
  });

  it("sets and clears label and notes", () => {
    let doc = velocityRule();
    doc = setNodeMeta(doc, "velocity", { label: "5 in 10m", notes: "SAMA rule 4.2" });
    expect(doc.nodes[2]).toMatchObject({ label: "5 in 10m", notes: "SAMA rule 4.2" });
    doc = setNodeMeta(doc, "velocity", { label: "" });
    expect(doc.nodes[2]).not.toHaveProperty("label");
    expect(setNodeMeta(doc, "velocity", { notes: "SAMA rule 4.2" })).toBe(doc);
  });
});

describe("clipboard", () => {
  it("copies the selected nodes and only the edges between them", () => {
    const clip = copyNodes(velocityRule(), ["keyBy", "velocity"]);
    expect(clip?.nodes.map((n) => n.id)).toEqual(["keyBy", "velocity"]);
    expect(clip?.edges).toEqual([{ from: "keyBy", to: "velocity" }]);
    expect(copyNodes(velocityRule(), [])).toBeUndefined();
  });

  it("pastes under new ids with the same stems, offset, edges renamed, side ports kept", () => {
    let doc = velocityRule();
    doc = { ...doc, nodes: [...doc.nodes, { id: "lateSink", type: "sink.file", params: { path: "late.jsonl" }, position: { x: 900, y: 200 } }], edges: [...doc.edges, { from: "velocity:late", to: "lateSink" }] };
    const clip = copyNodes(doc, ["velocity", "lateSink"]);
    if (!clip) throw new Error("nothing copied");
    const pasted = pasteClipboard(doc, clip, { x: 40, y: 40 });
    expect(pasted.nodeIds).toEqual(["velocity2", "lateSink2"]);
    expect(pasted.doc.nodes.find((n) => n.id === "velocity2")?.position).toEqual({ x: 640, y: 40 });
    expect(pasted.doc.edges.slice(-1)).toEqual([{ from: "velocity2:late", to: "lateSink2" }]);
    expect(pasted.doc.nodes.find((n) => n.id === "lateSink2")?.params).toEqual({ path: "late.jsonl" });
    // the copy is independent of the original
    expect(pasted.doc.nodes.find((n) => n.id === "lateSink2")?.params).not.toBe(doc.nodes.find((n) => n.id === "lateSink")?.params);
    const again = pasteClipboard(pasted.doc, clip, { x: 80, y: 80 });
    expect(again.nodeIds).toEqual(["velocity3", "lateSink3"]);
  });

  it("round-trips through text and refuses other text", () => {
    const clip = copyNodes(velocityRule(), ["keyBy"]);
    expect(parseClipboard(JSON.stringify(clip))).toEqual(clip);
    expect(parseClipboard("hello")).toBeUndefined();
    expect(parseClipboard(JSON.stringify({ format: "other", nodes: [], edges: [] }))).toBeUndefined();
  });
});

describe("findFreePosition", () => {
  const size = { width: 200, height: 100 };
  it("keeps the preferred spot when it is free", () => {
    expect(findFreePosition([], { x: 10, y: 20 }, size)).toEqual({ x: 10, y: 20 });
  });

  it("moves down, then right, until nothing overlaps", () => {
    const occupied = [{ x: 0, y: 0, width: 200, height: 100 }];
    const spot = findFreePosition(occupied, { x: 0, y: 0 }, size);
    expect(spot.x).toBe(0);
    expect(spot.y).toBeGreaterThanOrEqual(100);
    const column = Array.from({ length: 30 }, (_, i) => ({ x: 0, y: i * 50, width: 200, height: 100 }));
    expect(findFreePosition(column, { x: 0, y: 0 }, size).x).toBeGreaterThanOrEqual(200);
  });
});
