import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, pipelineDocumentSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { backtestAlertTopics, backtestPipeline, backtestRangeSchema } from "./backtests";

const rule = (extra: Record<string, unknown> = {}): PipelineDocument =>
  pipelineDocumentSchema.parse({
    format: PIPELINE_FORMAT,
    name: "card-velocity",
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts", startFrom: "latest", ...extra } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold: 3, windowMs: "10m", idField: "txId" } },
      { id: "alerts", type: "sink.kafka", params: { topic: "fraud.enforcement" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  });

describe("backtestPipeline", () => {
  it("bounds the Kafka source to the range and sends alerts and dead letters to the backtest's own topics", () => {
    const range = backtestRangeSchema.parse({ kind: "kafka", from: { by: "offsets", offsets: { "0": 100 } }, to: { by: "time", ts: 1_767_225_600_000 } });
    const p = backtestPipeline(rule(), range, "bt1");
    expect(p.nodes[0]?.params).toEqual({ topic: "payments", timestampField: "ts", startFrom: "earliest", bounded: true, startOffsets: { "0": 100 }, endTime: 1_767_225_600_000 });
    expect(backtestAlertTopics(p)).toEqual(["card-velocity.backtest.bt1"]);
    expect(p.settings.deadLetterTopic).toBe("card-velocity.dlq.backtest.bt1");
    expect(validatePipeline(p).ok).toBe(true);
  });

  it("drops a range the version itself carried, and can read another (recorded) topic", () => {
    const range = backtestRangeSchema.parse({ kind: "kafka", topic: "payments.2026-11", from: { by: "time", ts: 5 }, to: { by: "latest" } });
    const p = backtestPipeline(rule({ bounded: true, startOffsets: { "0": 7 }, endOffsets: { "0": 9 } }), range, "bt2");
    expect(p.nodes[0]?.params).toMatchObject({ topic: "payments.2026-11", bounded: true, startTime: 5 });
    expect(p.nodes[0]?.params).not.toHaveProperty("startOffsets");
    expect(p.nodes[0]?.params).not.toHaveProperty("endOffsets");
  });

  it("replaces the source with a file, keeping how it reads event time", () => {
    const p = backtestPipeline(rule({ maxOutOfOrdernessMs: 2_000 }), { kind: "file", path: "recorded/payments.jsonl" }, "bt3");
    expect(p.nodes[0]).toMatchObject({ id: "payments", type: "source.file", params: { path: "recorded/payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 2_000 } });
    expect(validatePipeline(p).ok).toBe(true);
  });

  it("refuses a range the graph cannot take, saying why", () => {
    const fileOnly = pipelineDocumentSchema.parse({ ...rule(), nodes: [{ id: "payments", type: "source.file", params: { path: "x.jsonl", timestampField: "ts" } }, ...rule().nodes.slice(1)] });
    expect(() => backtestPipeline(fileOnly, { kind: "kafka", from: { by: "earliest" }, to: { by: "latest" } }, "b")).toThrow(/has no Kafka source: a Kafka range cannot be replayed through it/);
    expect(backtestRangeSchema.safeParse({ kind: "kafka", from: { by: "offsets", offsets: { p: 1 } }, to: { by: "latest" } }).success).toBe(false);
  });
});
