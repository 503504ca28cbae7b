import type { PipelineDocument } from "@keyflow/operators";
import { validPipeline } from "@keyflow/operators/testing";
import { describe, expect, it } from "vitest";
import { referenceOnlySources, startSources } from "./source-order";

function doc(referenceType: "source.file" | "source.kafka"): PipelineDocument {
  return validPipeline({
    format: "keyflow.pipeline/v1",
    name: "order",
    nodes: [
      { id: "merchants", type: referenceType, params: referenceType === "source.file" ? { path: "m.jsonl", timestampField: "ts" } : { topic: "m", timestampField: "ts" } },
      { id: "payments", type: "source.file", params: { path: "p.jsonl", timestampField: "ts" } },
      { id: "enrich", type: "enrich.broadcast", params: { keyField: "merchantId", referenceKeyField: "id" } },
      { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
    ],
    edges: [
      { from: "merchants", to: "enrich:reference" },
      { from: "payments", to: "enrich" },
      { from: "enrich", to: "out" },
    ],
  });
}

const tick = () => new Promise((r) => setTimeout(r, 5));

describe("startSources", () => {
  it("runs a bounded reference-only source to its end before it starts the others", async () => {
    const d = doc("source.file");
    expect([...referenceOnlySources(d)]).toEqual(["merchants"]);
    const events: string[] = [];
    let endReference!: () => void;
    const sources = [
      { nodeId: "merchants", bounded: true },
      { nodeId: "payments", bounded: true },
    ];
    startSources(d, sources, new AbortController().signal, (s) => {
      events.push(`start ${s.nodeId}`);
      if (s.nodeId === "payments") return Promise.resolve();
      return new Promise<void>((resolve) => (endReference = resolve)).then(() => void events.push(`end ${s.nodeId}`));
    });
    await tick();
    expect(events).toEqual(["start merchants"]);
    endReference();
    await tick();
    expect(events).toEqual(["start merchants", "end merchants", "start payments"]);
  });

  it("starts the others after a failed reference source too, and none after an abort", async () => {
    const d = doc("source.file");
    const started: string[] = [];
    const sources = [
      { nodeId: "merchants", bounded: true },
      { nodeId: "payments", bounded: true },
    ];
    startSources(d, sources, new AbortController().signal, (s) => {
      started.push(s.nodeId);
      return s.nodeId === "merchants" ? Promise.reject(new Error("unreadable")) : Promise.resolve();
    });
    await tick();
    expect(started).toEqual(["merchants", "payments"]);
    const abort = new AbortController();
    const afterAbort: string[] = [];
    startSources(d, sources, abort.signal, (s) => {
      afterAbort.push(s.nodeId);
      return tick();
    });
    abort.abort();
    await tick();
    await tick();
    expect(afterAbort).toEqual(["merchants"]);
  });

  it("starts an unbounded reference source (Kafka) beside the others: it never ends", async () => {
    const started: string[] = [];
    startSources(doc("source.kafka"), [{ nodeId: "merchants", bounded: false }, { nodeId: "payments", bounded: true }], new AbortController().signal, (s) => {
      started.push(s.nodeId);
      return new Promise(() => {});
    });
    expect(started).toEqual(["merchants", "payments"]);
  });
});
