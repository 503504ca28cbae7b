// Against the REAL broker (KAFKA_BROKERS, from `bash scripts/services/start.sh kafka`): a dry run
// sampling "the last N records" of its source's topic reads the newest N across partitions, runs
// them through the draft, and leaves no consumer group behind.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import type { DryRunResult } from "../job/dry-run";
import { silentLogger } from "../log";
import { createRunnerService, type RunnerService } from "./main";

const env = readEnv();
const brokers = env.kafkaBrokers;
if (!brokers) {
  throw new Error("KAFKA_BROKERS is not set: this integration test needs the real broker. Start one with `bash scripts/services/start.sh kafka` and export the KAFKA_BROKERS line it prints.");
}

const run = randomBytes(4).toString("hex");
const TOPIC = `it-${run}-dry-payments`;
const T0 = Date.UTC(2026, 2, 1, 12);

let service: RunnerService;
let admin: Admin;
const kafka = new Kafka({ clientId: "dry-run-it", brokers: [...brokers], logLevel: logLevel.NOTHING });

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  // 40 payments, one every 10 s, alternating partitions; card X pays 3 times in the last 30 s.
  const messages = Array.from({ length: 40 }, (_, i) => ({
    partition: i % 2,
    value: JSON.stringify({ txId: `t${i}`, cardId: i >= 37 ? "X" : `c${i}`, amount: 10 + i, ts: T0 + i * 10_000 }),
  }));
  for (const m of messages) await producer.send({ topic: TOPIC, messages: [m] });
  await producer.disconnect();
  service = await createRunnerService(
    { ...env, runnerPort: 0, runnerHost: "127.0.0.1", databaseUrl: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-dry-it-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-dry-it-data-")) },
    silentLogger,
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await admin?.deleteTopics({ topics: [TOPIC] }).catch(() => {});
  await admin?.disconnect();
});

const pipeline = {
  format: "keyflow.pipeline/v1",
  name: `it-${run}-dry`,
  nodes: [
    { id: "payments", type: "source.kafka", params: { topic: TOPIC, timestampField: "ts", maxOutOfOrdernessMs: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "vel", type: "velocity", params: { threshold: 3, windowMs: "1m", idField: "txId" } },
    { id: "alerts", type: "sink.kafka", params: { topic: `it-${run}-dry-alerts` } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
  ],
};

describe("POST /dry-run with the last N records of a topic", () => {
  it("samples the newest N across partitions, in event-time order", async () => {
    const groupsBefore = (await admin.listGroups()).groups.map((g) => g.groupId);
    const res = await fetch(`${service.url}/dry-run`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify({ pipeline, records: { lastN: 10 } }) });
    const body = (await res.json()) as DryRunResult & { error?: string };
    expect(res.status, body.error).toBe(200);
    expect(body.inputs).toEqual({ payments: { records: 10, label: `kafka:${TOPIC}` } });
    const seen = body.nodes.payments?.ports.out?.records.map((r) => (r.value as { txId: string }).txId);
    expect(seen).toEqual(["t30", "t31", "t32", "t33", "t34", "t35", "t36", "t37", "t38", "t39"]);
    expect(body.alerts.count).toBe(1);
    expect(body.alerts.items[0]?.evidence.map((e) => e.id)).toEqual(["t37", "t38", "t39"]);
    expect(body.deadLetters.count).toBe(0);
    // Nothing committed under a group of its own that stays behind with members or offsets for the topic.
    const groupsAfter = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => !groupsBefore.includes(g));
    for (const groupId of groupsAfter) {
      const offsets = await admin.fetchOffsets({ groupId, topics: [TOPIC] });
      expect(offsets.flatMap((t) => t.partitions).filter((p) => Number(p.offset) >= 0)).toEqual([]);
    }
  }, 60_000);

  it("reads a whole small topic when N is larger, and names a missing topic", async () => {
    const all = await fetch(`${service.url}/dry-run`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify({ pipeline, records: { lastN: 1_000 } }) });
    expect(((await all.json()) as DryRunResult).inputs.payments?.records).toBe(40);
    const missing = await fetch(`${service.url}/dry-run`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify({ pipeline, records: { topic: `it-${run}-nope`, lastN: 5 } }) });
    expect(missing.status).toBe(502);
    expect(((await missing.json()) as { error: string }).error).toMatch(/does not exist/);
  }, 60_000);
});
