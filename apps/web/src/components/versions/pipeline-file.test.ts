import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { exportFileName, readPipelineFile, serializePipeline, uniqueName } from "./pipeline-file";

const doc: PipelineDocumentInput = {
  name: "velocity-check",
  nodes: [
    { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "vel", type: "velocity", params: { threshold: 5, windowMs: "2m" } },
    { id: "alerts", type: "sink.kafka", params: { topic: "alerts" } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
  ],
  format: PIPELINE_FORMAT,
};

describe("pipeline files", () => {
  it("exports with the format first and reads the same document back", () => {
    const text = serializePipeline(doc);
    expect(text.startsWith('{\n  "format": "keyflow.pipeline/v1",\n  "name": "velocity-check"')).toBe(true);
    expect(text.endsWith("}\n")).toBe(true);
    const read = readPipelineFile(text);
    if (!read.ok) throw new Error("expected the file to read");
    expect(read.document.nodes).toEqual(doc.nodes.map((n) => ({ ...n })));
    expect(read.errors).toBe(0);
    expect(exportFileName(doc)).toBe("velocity-check.keyflow.json");
    expect(exportFileName(doc, "v3")).toBe("velocity-check-v3.keyflow.json");
  });

  it("says where a JSON syntax error is", () => {
    const read = readPipelineFile('{\n  "format": "keyflow.pipeline/v1",\n  "name": oops\n}');
    expect(read).toMatchObject({ ok: false, stage: "json", line: 3 });
  });

  it("refuses a file that is not a pipeline document, saying why", () => {
    const read = readPipelineFile(JSON.stringify({ nodes: [] }));
    expect(read.ok).toBe(false);
    if (read.ok || read.stage !== "document") throw new Error("expected a document problem");
    expect(read.issues.map((i) => i.message).join("\n")).toMatch(/"format" must be "keyflow.pipeline\/v1"/);
  });

  it("accepts a document with errors, counting them", () => {
    const read = readPipelineFile(serializePipeline({ ...doc, edges: [] }));
    if (!read.ok) throw new Error("expected a document");
    expect(read.errors).toBeGreaterThan(0);
    expect(read.issues.some((i) => i.nodeId === "vel")).toBe(true);
  });

  it("finds a free name", () => {
    expect(uniqueName("a", [])).toBe("a");
    expect(uniqueName("a", ["a", "a-2"])).toBe("a-3");
    expect(uniqueName("x".repeat(128), ["x".repeat(128)])).toHaveLength(128);
  });
});
