import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, pipelineDocumentSchema, validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { backtestAlertTopics, backtestPipeline, backtestRangeSchema } from "./backtests";
import { backtestFileLimit, DEFAULT_BACKTEST_FILE_MAX_BYTES, displayName, uploadBacktestFile } from "./backtests-files";

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

  it("a file range outside the runner's data folder (/proc/self/environ) is refused before anything is deployed", () => {
    for (const path of ["/proc/self/environ", "../../proc/self/environ"]) {
      const p = backtestPipeline(rule(), { kind: "file", path }, "bt5");
      const errors = validatePipeline(p).issues.filter((i) => i.severity === "error").map((i) => i.message);
      expect(errors).toEqual([expect.stringMatching(/^node "payments": param "path" must be a path inside the data folder, not (an absolute path|one that leaves it)/)]);
    }
  });

  it("refuses a range the graph cannot take, saying why", () => {
    const fileOnly = pipelineDocumentSchema.parse({ ...rule(), nodes: [{ id: "payments", type: "source.file", params: { path: "x.jsonl", timestampField: "ts" } }, ...rule().nodes.slice(1)] });
    expect(() => backtestPipeline(fileOnly, { kind: "kafka", from: { by: "earliest" }, to: { by: "latest" } }, "b")).toThrow(/has no Kafka source: a Kafka range cannot be replayed through it/);
    expect(backtestRangeSchema.safeParse({ kind: "kafka", from: { by: "offsets", offsets: { p: 1 } }, to: { by: "latest" } }).success).toBe(false);
  });
});

describe("uploaded backtest files", () => {
  it("keep the picked file's name for display only: decoded, without control characters, bounded; the path is the runner's", () => {
    expect(displayName(encodeURIComponent("payments 1–2 Dec.jsonl"))).toBe("payments 1–2 Dec.jsonl");
    expect(displayName("a%0Ab%E0")).toBe("a%0Ab%E0");
    expect(displayName(encodeURIComponent("x\ny\u0000.jsonl"))).toBe("xy.jsonl");
    expect(displayName(null)).toBe("unnamed.jsonl");
    expect(displayName("n".repeat(500))).toHaveLength(200);
    const p = backtestPipeline(rule(), { kind: "file", path: "uploads/abc.jsonl", name: "payments.jsonl" }, "bt4");
    expect(p.nodes[0]?.params).toEqual({ path: "uploads/abc.jsonl", timestampField: "ts" });
  });

  it("share the runner's limit (KEYFLOW_UPLOAD_MAX_BYTES), refusing a declared size over it before sending a byte", async () => {
    expect(backtestFileLimit({})).toBe(DEFAULT_BACKTEST_FILE_MAX_BYTES);
    expect(backtestFileLimit({ KEYFLOW_UPLOAD_MAX_BYTES: "1000" })).toBe(1000);
    const user = { id: "u", email: "ada@bank.test", name: "ada", role: "analyst" as const };
    // No database and no runner at this address: the refusal comes first.
    const refused = uploadBacktestFile(null as never, "http://127.0.0.1:9", user, { body: new Blob(["{}\n"]).stream(), name: "big.jsonl", declaredBytes: 2_000, maxBytes: 1_000 });
    await expect(refused).rejects.toMatchObject({ status: 413, message: "the file is larger than the upload limit of 1000 bytes (KEYFLOW_UPLOAD_MAX_BYTES)" });
    await expect(uploadBacktestFile(null as never, "http://127.0.0.1:9", user, { body: null, name: "e.jsonl", declaredBytes: 0, maxBytes: 1_000 })).rejects.toThrow("e.jsonl: the file is empty");
  });
});
