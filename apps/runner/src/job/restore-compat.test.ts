import { pipelineDocumentSchema } from "@keyflow/operators";
import { describe, expect, it } from "vitest";
import { checkRestore, graphOf } from "./restore-compat";

const doc = (change: (d: { nodes: Array<{ id: string; type: string; params: Record<string, unknown> }>; edges: Array<{ from: string; to: string }> }) => void = () => {}) => {
  const d = {
    format: "keyflow.pipeline/v1",
    name: "compat",
    nodes: [
      { id: "pay", type: "source.file", params: { path: "pay.jsonl", timestampField: "ts" } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "vel", type: "velocity", params: { threshold: 5, windowMs: "2m" } },
      { id: "win", type: "window.tumbling", params: { sizeMs: 60_000, aggregate: { op: "count" } } },
      { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
    ],
    edges: [
      { from: "pay", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "byCard", to: "win" },
      { from: "vel", to: "out" },
      { from: "win", to: "out" },
    ],
  };
  change(d);
  return pipelineDocumentSchema.parse(d);
};

const old = graphOf(doc());
const check = (d: ReturnType<typeof doc>, allow = false) => checkRestore(old, d, allow, "the savepoint");

describe("checkRestore", () => {
  it("accepts the same graph and changes that leave the state's layout alone", () => {
    expect(check(doc())).toEqual({ problems: [], dropped: [] });
    expect(check(doc((d) => (d.nodes[2]!.params.threshold = 9)))).toEqual({ problems: [], dropped: [] });
    expect(check(doc((d) => (d.nodes[4]!.params.path = "elsewhere.jsonl")))).toEqual({ problems: [], dropped: [] });
  });

  it("refuses a removed stateful node unless its state may be dropped", () => {
    const removed = doc((d) => {
      d.nodes.splice(3, 1);
      d.edges = d.edges.filter((e) => e.from !== "win" && e.to !== "win");
    });
    expect(check(removed).problems).toEqual([`node "win" (window.tumbling) has state in the savepoint but is not in the pipeline: restore with allowNonRestoredState (--allow-non-restored-state) to drop its state`]);
    expect(check(removed, true)).toEqual({ problems: [], dropped: ["win"] });
  });

  it("refuses a changed type, a changed layout param and a changed key, naming the node", () => {
    expect(check(doc((d) => Object.assign(d.nodes[2]!, { type: "threshold", params: { expression: "amount", above: 1, recoverBelow: 0 } }))).problems).toEqual([
      `node "vel": its state in the savepoint is velocity state, the pipeline now makes it a threshold; give the new operator another node id`,
    ]);
    expect(check(doc((d) => (d.nodes[3]!.params.sizeMs = 120_000))).problems).toEqual([
      `node "win" (window.tumbling): param "sizeMs" changed since the savepoint, and the stored state is laid out by it; give the node another id to start it empty`,
    ]);
    expect(check(doc((d) => (d.nodes[1]!.params.field = "customer"))).problems).toEqual([
      `node "vel" (velocity): its state in the savepoint is keyed by "card", the pipeline now keys it by "customer"; give the node another id to start it empty`,
      `node "win" (window.tumbling): its state in the savepoint is keyed by "card", the pipeline now keys it by "customer"; give the node another id to start it empty`,
    ]);
  });
});
