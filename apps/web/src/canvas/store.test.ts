import { describe, expect, it } from "vitest";
import { pipelineDocumentSchema } from "@keyflow/operators";
import { addNode, connect, setParam } from "./graph-edit";
import { EditorStore, PASTE_OFFSET } from "./store";

const doc0 = pipelineDocumentSchema.parse({ format: "keyflow.pipeline/v1", name: "t", nodes: [], edges: [] });

function storeWithClock() {
  let t = 0;
  const store = new EditorStore(doc0, { now: () => t });
  return { store, tick: (ms: number) => (t += ms) };
}

describe("EditorStore", () => {
  it("records edits, undoes and redoes them, and counts revisions", () => {
    const { store, tick } = storeWithClock();
    const seen: number[] = [];
    store.subscribe(() => seen.push(store.getState().revision));
    store.edit((d) => addNode(d, { type: "velocity", position: { x: 0, y: 0 } }).doc, { select: { nodes: ["velocity"], edges: [] } });
    tick(5_000);
    store.edit((d) => addNode(d, { type: "velocity", position: { x: 300, y: 0 } }).doc);
    expect(store.getState().doc.nodes.map((n) => n.id)).toEqual(["velocity", "velocity2"]);
    expect(store.getState()).toMatchObject({ canUndo: true, canRedo: false, revision: 2 });
    store.undo();
    expect(store.getState().doc.nodes.map((n) => n.id)).toEqual(["velocity"]);
    store.undo();
    expect(store.getState()).toMatchObject({ canUndo: false, canRedo: true, revision: 4 });
    // the selected node is gone, so is its selection
    expect(store.getState().selection.nodes).toEqual([]);
    store.redo();
    expect(store.getState().doc.nodes).toHaveLength(1);
    expect(seen).toEqual([1, 2, 3, 4, 5]);
  });

  it("skips edits that change nothing", () => {
    const { store } = storeWithClock();
    expect(store.edit((d) => d)).toBe(false);
    expect(store.getState()).toMatchObject({ revision: 0, canUndo: false });
  });

  it("makes one undo step of typing in one field", () => {
    const { store, tick } = storeWithClock();
    store.edit((d) => addNode(d, { type: "velocity", position: { x: 0, y: 0 } }).doc);
    tick(5_000);
    for (const text of ["1", "10", "10m"]) {
      store.edit((d) => setParam(d, "velocity", ["windowMs"], text), { group: "param:velocity:windowMs" });
      tick(200);
    }
    expect(store.getState().doc.nodes[0]?.params).toEqual({ windowMs: "10m" });
    store.undo();
    expect(store.getState().doc.nodes[0]?.params).toEqual({});
  });

  it("copies and pastes the selection with new ids, each paste further away", () => {
    const { store } = storeWithClock();
    store.edit((d) => {
      let doc = addNode(d, { type: "keyBy", position: { x: 0, y: 0 } }).doc;
      doc = addNode(doc, { type: "velocity", position: { x: 300, y: 0 } }).doc;
      const r = connect(doc, "keyBy", "velocity");
      return r.ok ? r.doc : doc;
    });
    store.select({ nodes: ["keyBy", "velocity"], edges: [] });
    const clip = store.copy();
    if (!clip) throw new Error("nothing copied");
    expect(store.paste(clip)).toEqual(["keyBy2", "velocity2"]);
    expect(store.getState().selection.nodes).toEqual(["keyBy2", "velocity2"]);
    expect(store.getState().doc.edges).toContainEqual({ from: "keyBy2", to: "velocity2" });
    expect(store.paste(clip)).toEqual(["keyBy3", "velocity3"]);
    expect(store.getState().doc.nodes.find((n) => n.id === "velocity3")?.position).toEqual({ x: 300 + 2 * PASTE_OFFSET, y: 2 * PASTE_OFFSET });
    store.undo();
    expect(store.getState().doc.nodes).toHaveLength(4);
  });

  it("refuses edits when read-only", () => {
    const store = new EditorStore(doc0, { readOnly: true });
    expect(store.edit((d) => addNode(d, { type: "velocity", position: { x: 0, y: 0 } }).doc)).toBe(false);
    expect(store.getState().doc).toBe(doc0);
  });

  it("replaces the document without an undo step", () => {
    const { store } = storeWithClock();
    const laidOut = addNode(doc0, { type: "velocity", position: { x: 0, y: 0 } }).doc;
    store.replace(laidOut);
    expect(store.getState()).toMatchObject({ doc: laidOut, canUndo: false, revision: 1 });
  });
});
