// Promotion and rollback of a rule job under load, against the REAL broker (KAFKA_BROKERS), through
// the runner's HTTP API: versions 3 (threshold 4) and 4 (threshold 3) of one velocity rule run as
// branches of one job over one input topic while a producer keeps writing; v4 is promoted (v3 drops
// to shadow), then enforcement rolls back to v3 (v4 stops). The enforcement topic, read with
// read_committed, holds exactly the expected alerts, once each: v3's for the records before the
// promotion's boundary offsets, v4's from there to the rollback's, v3's after. The oracle is each
// version run alone over the same records (`keyflow run`), its alerts split by the boundaries the job
// reported. The shadow topic holds exactly the shadow side (tagged with the version), so shadow
// and enforcing branches decide the same as the engine alone, and shadow never reaches enforcement.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv, type RunnerEnv } from "../env";
import { createLogger } from "../log";
import { createRunnerService, type RunnerService } from "../service/main";
import type { JobView } from "../service/jobs";
import { requestJson, requireKafkaBrokers } from "../io/kafka/testing";
import { eventually, runCli } from "../../test/run-cli";
import type { RoutingSwitch } from "./routing";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const kafka = new Kafka({ clientId: `keyflow-ps-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ps-"));
let admin: Admin;
let service: RunnerService;
const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);
/** Recent event times: the broker deletes by message timestamp (24 h retention in `npm run services`). */
const T0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;

/**
 * The stream: cards in blocks of 8, each card with 3 or 4 payments (by parity), the block's payments
 * interleaved round-robin 100 ms apart, so at any offset several cards are part-way through their
 * burst (a switch or a restart there splits their windows). A card comes back after 1 000 cards,
 * far outside the 1-minute window. Threshold 4 alerts on the 4th payment of each card of 4;
 * threshold 3 on the 3rd of every card and the 4th of cards of 4. Each card keeps to one partition,
 * so each card's payments are in order wherever they are read.
 */
function* payments(partitions: number): Generator<{ partition: number; key: string; value: string }> {
  let i = 0;
  for (let block = 0; ; block++) {
    for (let round = 0; round < 4; round++) {
      for (let g = block * 8; g < block * 8 + 8; g++) {
        if (round >= 3 + (g % 2)) continue;
        const cardId = `c${g % 1_000}`;
        yield { partition: Math.floor(g / 2) % partitions, key: cardId, value: JSON.stringify({ txId: `t${i}`, cardId, amount: (i * 37) % 900, ts: T0 + i * 100 }) };
        i++;
      }
    }
  }
}

function version(rule: string, input: string, threshold: number, sinkTopic: string) {
  const nodes: Array<{ id: string; type: string; params: Record<string, unknown> }> = [
    { id: "payments", type: "source.kafka", params: { topic: input, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1_000 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    // eager: an alert is decided by the record that arrives (ordered mode would decide when the watermark passes it).
    { id: "velocity", type: "velocity", params: { threshold, windowMs: "1m", idField: "txId", mode: "eager" } },
    { id: "alerts", type: "sink.kafka", params: { topic: sinkTopic, deliveryGuarantee: "exactly-once" } },
  ];
  return {
    format: "keyflow.pipeline/v1",
    name: rule,
    settings: { checkpointIntervalMs: 400 },
    nodes,
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  };
}

interface Read {
  partition: number;
  offset: number;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Every message of `topic` up to its current end offsets; read_committed unless told. */
async function readAll(topic: string, readUncommitted = false): Promise<Read[]> {
  const ends = new Map<number, number>();
  for (const o of await admin.fetchTopicOffsets(topic)) if (Number(o.high) > Number(o.low)) ends.set(o.partition, Number(o.high));
  const out: Read[] = [];
  if (ends.size === 0) return out;
  const reached = new Set<number>();
  const consumer = kafka.consumer({ groupId: `keyflow-it-reader-${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 100, readUncommitted });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  // Batches of transaction markers only never reach eachBatch: their end is seen here.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (Number(payload.lastOffset) + 1 >= (ends.get(payload.partition) ?? 0)) reached.add(payload.partition);
  });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        if (Number(m.offset) >= (ends.get(batch.partition) ?? 0)) continue;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(m.headers ?? {})) headers[k] = String(Array.isArray(v) ? v[0] : v);
        out.push({ partition: batch.partition, offset: Number(m.offset), key: m.key?.toString("utf8") ?? "", value: m.value?.toString("utf8") ?? "", headers });
      }
    },
  });
  try {
    await eventually(() => [...ends.keys()].every((p) => reached.has(p)), `reading "${topic}" to its end offsets`, 120_000);
  } finally {
    await consumer.disconnect();
  }
  return out;
}

/** Keeps writing payments until stopped: the load the switches happen under. */
function startProducer(topic: string, partitions: number): { stop: () => Promise<number> } {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  const source = payments(partitions);
  let stopping = false;
  let sent = 0;
  const loop = (async () => {
    await producer.connect();
    while (!stopping) {
      const messages = Array.from({ length: 100 }, () => source.next().value as { partition: number; key: string; value: string });
      await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
      sent += messages.length;
      await new Promise((r) => setTimeout(r, 15));
    }
    await producer.disconnect();
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      return sent;
    },
  };
}

type Offsets = Record<string, number>;
const nextOffsets = (s: RoutingSwitch): Offsets => (s.sources.payments as { next: Offsets }).next;

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  const env: RunnerEnv = { ...readEnv(), runnerPort: 0, runnerHost: "127.0.0.1", checkpointRoot: path.join(dir, "checkpoints"), dataDir: path.join(dir, "data") };
  service = await createRunnerService(env, createLogger("warn"));
});

afterAll(async () => {
  await service?.close();
  await admin?.disconnect();
});

describe.each([1, 2])("promotion and rollback of a rule job at parallelism %i, under load", (parallelism) => {
  it("switches enforcement at checkpoint boundaries: every expected alert exactly once, shadow never in enforcement", async () => {
    const rule = `ps-${run}-p${parallelism}`;
    const input = `${rule}-payments`;
    const enforcement = `${rule}-enforcement`;
    await admin.createTopics({ topics: [{ topic: input, numPartitions: parallelism }, { topic: enforcement, numPartitions: 1 }], waitForLeaders: true });
    // One early payment per partition, read before the load starts: a partition the job has not
    // seen yet does not hold the watermark back, so without it the first fetch of one partition
    // could make the other's first payments late (dropped by velocity, in any job).
    const warm = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await warm.connect();
    await warm.send({ topic: input, acks: -1, messages: Array.from({ length: parallelism }, (_, p) => ({ partition: p, key: `warm-${p}`, value: JSON.stringify({ txId: `warm-${p}`, cardId: `warm-${p}`, amount: 1, ts: T0 - 60_000 }) })) });
    await warm.disconnect();
    let producer: { stop: () => Promise<number> } = { stop: () => Promise.resolve(0) };
    const jobId = `${rule}-job`;
    let added: Offsets = {};
    // v3 (threshold 4) enforcing and v4 (threshold 3) in shadow, and any more branches.
    const ruleJob = (...more: Array<{ version: number; mode: string; pipeline: unknown }>) => ({
      name: rule,
      settings: { parallelism },
      branches: [{ version: 3, mode: "enforcing", pipeline: version(rule, input, 4, enforcement) }, { version: 4, mode: "shadow", pipeline: version(rule, input, 3, enforcement) }, ...more],
    });
    const job = async () => (await api<JobView>("GET", `/jobs/${jobId}`)).json;
    const checkpointsAfter = (n: number, what: string) =>
      eventually(async () => {
        const v = await job();
        if (v.status === "failed" || v.status === "restarting") throw new Error(`job ${v.status}: ${v.failure}`);
        return (v.lastCheckpoint?.id ?? 0) >= n ? v : undefined;
      }, what, 120_000, 50);
    try {
      const deployed = await api<JobView & { nodeIds: Record<string, Record<string, string>> }>("POST", "/rule-jobs", {
        jobId,
        rule: ruleJob(),
      });
      expect(deployed.status, JSON.stringify(deployed.json)).toBe(201);
      expect(deployed.json.nodeIds).toEqual({ "3": { payments: "payments", byCard: "v3-byCard", velocity: "v3-velocity", alerts: "v3-alerts" }, "4": { payments: "payments", byCard: "v4-byCard", velocity: "v4-velocity", alerts: "v4-alerts" } });
      expect(deployed.json.routing?.modes).toEqual({ "3": "enforcing", "4": "shadow" });
      await eventually(async () => {
        const lag = (await job()).sources.payments?.lag ?? {};
        return Array.from({ length: parallelism }, (_, p) => lag[String(p)] === 0).every(Boolean) ? true : undefined;
      }, "the job to read the early payment of every partition", 60_000, 50);
      producer = startProducer(input, parallelism);
      const started = (await checkpointsAfter(1, "a first checkpoint")).lastCheckpoint?.id ?? 0;
      await checkpointsAfter(started + 3, "three checkpoints under load");

      // Version 5 joins in shadow: a savepoint, and the job again with three branches from it. v3 and
      // v4 restore their state by node id (their alerts below match the versions alone, windows
      // spanning the restart included); v5 starts empty at the savepoint's offsets.
      const stoppedAt = await api<JobView & { savepointPath: string }>("POST", `/jobs/${jobId}/stop?savepoint=true`, {});
      expect(stoppedAt.status, JSON.stringify(stoppedAt.json)).toBe(200);
      const savepoint = JSON.parse(readFileSync(path.join(stoppedAt.json.savepointPath, "_metadata.json"), "utf8")) as { id: number; sources: { payments: { next: Offsets } } };
      added = savepoint.sources.payments.next;
      const redeployed = await api<JobView>("POST", "/rule-jobs", {
        jobId,
        restoreFrom: stoppedAt.json.savepointPath,
        rule: ruleJob({ version: 5, mode: "shadow", pipeline: version(rule, input, 2, enforcement) }),
      });
      expect(redeployed.status, JSON.stringify(redeployed.json)).toBe(201);
      expect(redeployed.json.routing?.modes).toEqual({ "3": "enforcing", "4": "shadow", "5": "shadow" });
      await checkpointsAfter(savepoint.id + 3, "three checkpoints with version 5 before the promotion");

      const promoted = await api<RoutingSwitch>("POST", `/jobs/${jobId}/routing`, { modes: { 4: "enforcing", 3: "shadow" } });
      expect(promoted.status, JSON.stringify(promoted.json)).toBe(200);
      expect(promoted.json).toMatchObject({ before: { "3": "enforcing", "4": "shadow" }, after: { "3": "shadow", "4": "enforcing" } });
      await checkpointsAfter(promoted.json.checkpointId + 3, "three checkpoints after the promotion");
      // Two enforcing versions are refused.
      const both = await api<{ error: string }>("POST", `/jobs/${jobId}/routing`, { modes: { 3: "enforcing" } });
      expect(both.status).toBe(409);
      expect(both.json.error).toMatch(/versions 3 and 4 would both enforce/);

      const rolledBack = await api<RoutingSwitch>("POST", `/jobs/${jobId}/routing`, { modes: { 3: "enforcing", 4: "stopped" } });
      expect(rolledBack.status, JSON.stringify(rolledBack.json)).toBe(200);
      expect(rolledBack.json.checkpointId).toBeGreaterThan(promoted.json.checkpointId);
      await checkpointsAfter(rolledBack.json.checkpointId + 3, "three checkpoints after the rollback");
      const routing = (await api<{ modes: Record<string, string>; switches: RoutingSwitch[] }>("GET", `/jobs/${jobId}/routing`)).json;
      expect(routing.modes).toEqual({ "3": "enforcing", "4": "stopped", "5": "shadow" });
      expect(routing.switches.map((s) => s.checkpointId)).toEqual([promoted.json.checkpointId, rolledBack.json.checkpointId]);
    } finally {
      await producer.stop();
    }
    // The job catches up with the end of the input, then stops with a final checkpoint.
    const ends: Offsets = {};
    for (const o of await admin.fetchTopicOffsets(input)) ends[String(o.partition)] = Number(o.high);
    await eventually(async () => {
      const v = await job();
      const lag = v.sources.payments?.lag ?? {};
      return Object.keys(ends).every((p) => lag[p] === 0) ? true : undefined;
    }, "the job to read the whole input", 120_000, 100);
    const stopped = await api<JobView>("DELETE", `/jobs/${jobId}`);
    expect(stopped.json.status).toBe("stopped");

    // The input as written, by record id: its partition and offset.
    const records = await readAll(input, true);
    const where = new Map(records.map((r) => [String((JSON.parse(r.value) as { txId: string }).txId), r]));
    expect(records.length).toBeGreaterThan(2_000);

    // The oracle: each version alone over the same records through `keyflow run`, from a file in
    // event-time order (each card keeps to one partition, so its payments keep their order; a bounded
    // read of several partitions could let one run ahead and make the other's records late).
    const inputFile = path.join(dir, `${rule}-input.jsonl`);
    writeFileSync(inputFile, records.map((r) => r.value).sort((x, y) => (JSON.parse(x) as { ts: number }).ts - (JSON.parse(y) as { ts: number }).ts).join("\n") + "\n");
    const alone = async (v: number, threshold: number) => {
      const file = path.join(dir, `${rule}-v${v}.json`);
      const out = path.join(dir, `${rule}-alone-v${v}.jsonl`);
      const doc = version(`${rule}-alone-v${v}`, input, threshold, "unused");
      // Relative to the pipeline file's folder (`keyflow run`'s data folder), where both are.
      doc.nodes[0] = { id: "payments", type: "source.file", params: { path: path.basename(inputFile), timestampField: "ts", maxOutOfOrdernessMs: 1_000 } };
      doc.nodes[3] = { id: "alerts", type: "sink.file", params: { path: path.basename(out) } };
      writeFileSync(file, JSON.stringify(doc));
      const r = await runCli(["run", file]);
      expect(r.code, r.stderr).toBe(0);
      return readFileSync(out, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as { event: { txId: string } } & Record<string, unknown>);
    };
    const v3Alone = await alone(3, 4);
    const v4Alone = await alone(4, 3);
    const v5Alone = new Set((await alone(5, 2)).map((x) => x.event.txId));
    expect(v3Alone.length).toBeGreaterThan(100);
    expect(v4Alone.length).toBeGreaterThan(v3Alone.length);

    // Which side of each boundary an alert's triggering record is on.
    const promoted = (await api<{ switches: RoutingSwitch[] }>("GET", `/jobs/${jobId}/routing`)).json.switches;
    const [a, b] = [nextOffsets(promoted[0]!), nextOffsets(promoted[1]!)];
    const span = (alert: { event: { txId: string } }): "before" | "between" | "after" => {
      const r = where.get(alert.event.txId);
      if (!r) throw new Error(`alert for ${alert.event.txId}: no such input record`);
      const p = String(r.partition);
      if (r.offset < (a[p] ?? 0)) return "before";
      return r.offset < (b[p] ?? 0) ? "between" : "after";
    };
    const tagged = (alerts: Array<Record<string, unknown>>, v: number) => alerts.map((x) => JSON.stringify({ ...x, ruleVersion: v }));
    const expectedEnforced = [
      ...tagged(v3Alone.filter((x) => span(x) !== "between"), 3),
      ...tagged(v4Alone.filter((x) => span(x) === "between"), 4),
    ].sort();
    const expectedShadow = [...tagged(v4Alone.filter((x) => span(x) === "before"), 4), ...tagged(v3Alone.filter((x) => span(x) === "between"), 3)].sort();
    // Both boundaries fall inside the stream: each side holds alerts of its version.
    expect(v3Alone.filter((x) => span(x) === "before").length).toBeGreaterThan(0);
    expect(v4Alone.filter((x) => span(x) === "between").length).toBeGreaterThan(0);
    expect(v3Alone.filter((x) => span(x) === "after").length).toBeGreaterThan(0);

    const enforced = await readAll(enforcement);
    expect(enforced.length).toBe(expectedEnforced.length);
    expect(enforced.map((m) => m.value).sort()).toEqual(expectedEnforced);
    const shadow = await readAll(`${rule}.shadow`);
    const versionOf = (m: Read) => (JSON.parse(m.value) as { ruleVersion: number }).ruleVersion;
    expect(shadow.filter((m) => versionOf(m) !== 5).map((m) => m.value).sort()).toEqual(expectedShadow);
    // Version 5 (empty state from the savepoint on): alerts only for records after it, each one the
    // version alone also raises (alone, a window that began earlier can make it alert sooner).
    const v5 = shadow.filter((m) => versionOf(m) === 5).map((m) => (JSON.parse(m.value) as { event: { txId: string } }).event.txId);
    expect(v5.length).toBeGreaterThan(0);
    for (const txId of v5) {
      expect(v5Alone.has(txId), txId).toBe(true);
      const r = where.get(txId);
      expect(r && r.offset >= (added[String(r.partition)] ?? 0), txId).toBe(true);
    }
    // The version is in a header too, as in the record.
    for (const m of [...shadow, ...enforced]) expect(m.headers["keyflow-rule-version"]).toBe(String((JSON.parse(m.value) as { ruleVersion: number }).ruleVersion));
  });
});
