import { describe, expect, it } from "vitest";
import { catalog, pipelineDocumentSchema } from "@keyflow/operators";
import { toOperatorView } from "../catalog/operator-view";
import { connectOptions, filterConnectOptions } from "./connect-options";
import type { CatalogLookup } from "./flow";
import { addNode, connect } from "./graph-edit";

const views = new Map(catalog.map((s) => [s.type, toOperatorView(s)]));
const lookup: CatalogLookup = (type) => views.get(type);

function doc() {
  let d = pipelineDocumentSchema.parse({ format: "keyflow.pipeline/v1", name: "t", nodes: [], edges: [] });
  for (const type of ["source.file", "keyBy", "velocity", "sink.file"]) d = addNode(d, { type, position: { x: 0, y: 0 } }).doc;
  return d;
}

describe("connectOptions", () => {
  it("lists what the validator accepts first, outgoing before incoming, with reasons for the rest", () => {
    const options = connectOptions(doc(), "velocity", lookup);
    const ok = options.filter((o) => o.ok).map((o) => `${o.from}->${o.to}`);
    expect(ok).toEqual(["velocity->keyBy", "velocity:late->keyBy", "velocity->sinkFile", "velocity:late->sinkFile", "keyBy->velocity"]);
    const refused = options.find((o) => o.from === "sourceFile" && o.to === "velocity");
    expect(refused).toMatchObject({ ok: false, direction: "in", reason: expect.stringContaining("add a keyBy before it") });
    expect(options.findIndex((o) => !o.ok)).toBeGreaterThan(options.findLastIndex((o) => o.ok));
  });

  it("leaves out edges that already exist", () => {
    const r = connect(doc(), "keyBy", "velocity");
    if (!r.ok) throw new Error(r.reason);
    expect(connectOptions(r.doc, "velocity", lookup).some((o) => o.from === "keyBy" && o.to === "velocity")).toBe(false);
  });

  it("filters by every word of the query", () => {
    const options = connectOptions(doc(), "velocity", lookup);
    expect(filterConnectOptions(options, "late sink").map((o) => o.from)).toEqual(["velocity:late"]);
    expect(filterConnectOptions(options, "")).toHaveLength(options.length);
  });

  it("is empty for a node the catalog does not know", () => {
    const d = { ...doc(), nodes: [...doc().nodes, { id: "x", type: "acme.thing", params: {} }] };
    expect(connectOptions(d, "x", lookup)).toEqual([]);
  });
});
