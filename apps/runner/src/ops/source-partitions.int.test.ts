// Against the REAL broker (KAFKA_BROKERS): a Kafka source's partitions on the live stream. 3 000
// payments of about 1 KiB each on partitions 0 and 1 of a 3-partition topic (more than one fetch,
// which takes at most 1 MiB per partition), partition 2 empty; the job's sink is throttled from the
// start, so the consumer falls behind: partitions 0 and 1 show consumer lag (the last fetch's high
// watermark against the offsets taken) and partition 2 shows idle (no record within
// idleTimeoutMs). Lifting the throttle drains the lag to 0 with every record counted.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { createRunnerService, type RunnerService } from "../service/main";
import { watchStream } from "./testing";

const env = readEnv();
const brokers = env.kafkaBrokers;
if (!brokers) throw new Error("KAFKA_BROKERS is not set: this integration test needs the real broker (`npm run services` prints it).");

const run = randomBytes(4).toString("hex");
const TOPIC = `it-${run}-partitions`;
const PER_PARTITION = 3000;
const PADDING = "x".repeat(1000);
const kafka = new Kafka({ clientId: `keyflow-it-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let service: RunnerService;

beforeAll(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const t0 = Date.UTC(2026, 0, 1);
  for (const partition of [0, 1]) {
    // In requests of 500 (the broker takes batches up to 1 MiB).
    for (let from = 0; from < PER_PARTITION; from += 500) {
      const messages = Array.from({ length: 500 }, (_, k) => {
        const i = from + k;
        return { partition, value: JSON.stringify({ id: `p${partition}-${i}`, cardId: `c${i % 50}`, amount: i, ts: t0 + i * 10, note: PADDING }) };
      });
      await producer.send({ topic: TOPIC, messages });
    }
  }
  await producer.disconnect();
  service = await createRunnerService(
    { ...env, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-it-parts-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-it-parts-data-")) },
    silentLogger,
    { checkpointIntervalMs: 1000 },
  );
});

afterAll(async () => {
  await service?.close();
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: [TOPIC] }).catch(() => {});
  await admin.disconnect();
});

describe("a Kafka source's partitions on the live stream", () => {
  it("shows consumer lag per partition while the sink is throttled, the empty partition idle, and no lag once lifted", async () => {
    const id = `it-${run}`;
    const pipeline = {
      format: "keyflow.pipeline/v1",
      name: `it-${run}-parts`,
      nodes: [
        { id: "payments", type: "source.kafka", params: { topic: TOPIC, timestampField: "ts", idleTimeoutMs: 1000 } },
        { id: "out", type: "sink.file", params: { path: "parts/out.jsonl" } },
      ],
      edges: [{ from: "payments", to: "out" }],
    };
    const post = (url: string, body: unknown) => fetch(`${service.url}${url}`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post("/jobs", { deploymentId: id, pipeline })).status).toBe(201);
    expect((await post(`/jobs/${id}/nodes/out/throttle`, { recordsPerSecond: 50 })).status).toBe(200);

    const lagging = await watchStream(service, id, "lag on partitions 0 and 1, partition 2 idle", (s) => {
      const parts = s.sourcePartitions["payments"]?.partitions ?? [];
      const [p0, p1, p2] = [0, 1, 2].map((n) => parts.find((p) => p.partition === n));
      return p0 && p1 && p2 && (p0.lag ?? 0) > 0 && (p1.lag ?? 0) > 0 && p0.records > 0 && p2.idle && p2.records === 0 ? s : undefined;
    });
    expect(lagging.sourcePartitions["payments"]?.input).toBe(TOPIC);
    const p0 = lagging.sourcePartitions["payments"]?.partitions[0];
    // Lag is what is left of the partition: its end minus what the job took.
    expect((p0?.lag ?? 0) + (p0?.records ?? 0)).toBeLessThanOrEqual(PER_PARTITION);
    // The engine's own partition watermark (raw bytes are parsed there): behind what was handed over.
    expect(p0?.watermark).toBeGreaterThanOrEqual(Date.UTC(2026, 0, 1) - 10_001);
    expect(p0?.watermark).toBeLessThanOrEqual(Date.UTC(2026, 0, 1) + ((p0?.records ?? 0) - 1) * 10 - 10_001);

    expect((await post(`/jobs/${id}/nodes/out/throttle`, { recordsPerSecond: null })).status).toBe(200);
    const drained = await watchStream(service, id, "every record read and no lag", (s) => {
      const parts = s.sourcePartitions["payments"]?.partitions ?? [];
      const read = parts.filter((p) => p.partition < 2);
      return read.length === 2 && read.every((p) => p.lag === 0 && p.records === PER_PARTITION) ? s : undefined;
    });
    expect(drained.sourcePartitions["payments"]?.partitions.map((p) => p.lastOffset)).toEqual([String(PER_PARTITION - 1), String(PER_PARTITION - 1), null]);
    // Every record parsed: each partition's watermark is its last event time − maxOutOfOrderness − 1;
    // the empty partition has none.
    const last = Date.UTC(2026, 0, 1) + (PER_PARTITION - 1) * 10 - 10_001;
    await watchStream(service, id, "partition watermarks at the last event time", (s) => {
      const wms = s.sourcePartitions["payments"]?.partitions.map((p) => p.watermark);
      return wms?.[0] === last && wms[1] === last && wms[2] === null ? s : undefined;
    });
    expect((await fetch(`${service.url}/jobs/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${service.token}` } })).status).toBe(200);
  });
});
