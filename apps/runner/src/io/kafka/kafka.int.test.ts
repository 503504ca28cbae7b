// Against the REAL broker (KAFKA_BROKERS, from `bash scripts/services/start.sh kafka`): payments with
// malformed ones among them flow source.kafka -> filter(amount > 500) -> sink.kafka through a job
// deployed on the runner's HTTP API; the sink topic holds exactly the expected records, the
// dead-letter topic each malformed record once with its reason, topic, partition and offset, and the
// job keeps running. Then the same topic as a bounded backtest through `keyflow run`.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { ConfigResourceTypes, Kafka, logLevel, type Admin, type IHeaders, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv, type RunnerEnv } from "../../env";
import { createLogger } from "../../log";
import { createRunnerService, type RunnerService } from "../../service/main";
import type { JobView } from "../../service/jobs";
import { eventually, runCli, startCli } from "../../../test/run-cli";
import { DLQ_HEADERS } from "./dead-letters";
import { requestJson } from "./testing";

const env = readEnv();
const brokers = env.kafkaBrokers;
if (!brokers) {
  throw new Error("KAFKA_BROKERS is not set: this integration test needs the real broker. Start one with `bash scripts/services/start.sh kafka` and export the KAFKA_BROKERS line it prints.");
}

const run = randomBytes(4).toString("hex");
const PAYMENTS = `it-${run}-payments`;
const ALERTS = `it-${run}-alerts`;
const PIPELINE = `it-${run}-big`;
const PARTITIONS = 3;
/** Recent event times: messages carry them, and the broker rolls and deletes by timestamp (24 h in `npm run services`). */
const T0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;

interface Sent {
  id: string;
  partition: number;
  offset: string;
  raw: string;
  valid: boolean;
  amount: number;
  bad?: "json" | "ts";
}

const kafka = new Kafka({ clientId: `keyflow-it-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
let producer: Producer;
const nextOffset = new Map<number, number>();
const sent: Sent[] = [];

/** Produces records i in [from, to): every 40th is bad JSON, every 40th (shifted) lacks its timestamp. */
async function producePayments(from: number, to: number, opts: { malformed: boolean }): Promise<Sent[]> {
  const batch: Sent[] = [];
  for (let i = from; i < to; i++) {
    const partition = i % PARTITIONS;
    const offset = nextOffset.get(partition) ?? 0;
    nextOffset.set(partition, offset + 1);
    const id = `p${i}`;
    const amount = ((i * 7919) % 1000) + 0.25;
    let raw: string;
    let bad: Sent["bad"];
    if (opts.malformed && i % 40 === 7) {
      raw = `{"id":"${id}","amount": ${amount},"ts": }`;
      bad = "json";
    } else if (opts.malformed && i % 40 === 23) {
      raw = JSON.stringify({ id, amount, cardId: `c${i % 17}` });
      bad = "ts";
    } else {
      raw = JSON.stringify({ id, amount, cardId: `c${i % 17}`, ts: T0 + i * 1000 });
    }
    batch.push({ id, partition, offset: String(offset), raw, valid: bad === undefined, amount, ...(bad ? { bad } : {}) });
  }
  // One request per partition, in order, so each record's offset is known in advance.
  for (let p = 0; p < PARTITIONS; p++) {
    const messages = batch.filter((s) => s.partition === p).map((s) => ({ partition: p, value: s.raw }));
    if (messages.length > 0) await producer.send({ topic: PAYMENTS, messages, acks: -1 });
  }
  sent.push(...batch);
  return batch;
}

interface Consumed {
  partition: number;
  offset: string;
  value: string;
  headers: Record<string, string>;
}

/** Reads a topic from the beginning (read_committed) into `into` until stopped. */
async function collect(topic: string, into: Consumed[]): Promise<() => Promise<void>> {
  const consumer = kafka.consumer({ groupId: `it-${run}-reader-${topic}-${randomBytes(2).toString("hex")}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      into.push({ partition, offset: message.offset, value: message.value?.toString("utf8") ?? "", headers: headerStrings(message.headers) });
    },
  });
  return () => consumer.disconnect();
}

function headerStrings(h: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    const one = Array.isArray(v) ? v[0] : v;
    if (one !== undefined) out[k] = Buffer.isBuffer(one) ? one.toString("utf8") : String(one);
  }
  return out;
}

const expectedAlerts = () =>
  sent
    .filter((s) => s.valid && s.amount > 500)
    .map((s) => s.id)
    .sort();

const pipelineDoc = (name: string, source: Record<string, unknown>, sink: { id: string; type: string; params: Record<string, unknown> }) => ({
  format: "keyflow.pipeline/v1",
  name,
  settings: { checkpointIntervalMs: 1000 },
  nodes: [
    { id: "payments", type: "source.kafka", params: { topic: PAYMENTS, timestampField: "ts", ...source } },
    { id: "big", type: "filter", params: { expression: "amount > 500" } },
    sink,
  ],
  edges: [
    { from: "payments", to: "big" },
    { from: "big", to: sink.id },
  ],
});

let service: RunnerService;
const stoppers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: PAYMENTS, numPartitions: PARTITIONS },
      { topic: ALERTS, numPartitions: PARTITIONS },
    ],
    waitForLeaders: true,
  });
  producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const serviceEnv: RunnerEnv = {
    ...env,
    runnerPort: 0,
    runnerHost: "127.0.0.1",
    checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-it-ckpt-")),
    dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-it-data-")),
  };
  service = await createRunnerService(serviceEnv, createLogger("warn"));
});

afterAll(async () => {
  await service?.close();
  for (const stop of stoppers) await stop().catch(() => {});
  await producer?.disconnect();
  await admin?.disconnect();
});

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

describe("the services' broker (scripts/services/start.sh)", () => {
  it("never deletes by time: sinks stamp messages with event time, and the tests' events are dated 2026-01-01", async () => {
    // Under a time retention the broker deletes such output at its next retention check, mid-test
    // (shadow-enforcing.int lost half its alerts that way in CI).
    const [broker] = (await admin.describeCluster()).brokers;
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.BROKER, name: String(broker?.nodeId) }] });
    const retentionMs = described.resources[0]?.configEntries.find((e) => e.configName === "log.retention.ms")?.configValue;
    expect(retentionMs).toBe("-1");
  });
});

describe("source.kafka -> filter -> sink.kafka on the real broker", () => {
  const deploymentId = `it-${run}`;

  it("delivers exactly the matching records, dead-letters each malformed one once, and keeps running", async () => {
    const first = await producePayments(0, 1000, { malformed: true });
    const malformed = first.filter((s) => !s.valid);
    expect(malformed.length).toBe(50);

    const deployed = await api<JobView>("POST", "/jobs", {
      deploymentId,
      pipeline: pipelineDoc(PIPELINE, { startFrom: "earliest" }, { id: "alerts", type: "sink.kafka", params: { topic: ALERTS } }),
    });
    expect(deployed.status).toBe(201);
    expect(deployed.json.id).toBe(deploymentId);

    const alerts: Consumed[] = [];
    stoppers.push(await collect(ALERTS, alerts));
    const dead: Consumed[] = [];
    await eventually(async () => (await admin.listTopics()).includes(`${PIPELINE}.dlq`), "the dead-letter topic");
    stoppers.push(await collect(`${PIPELINE}.dlq`, dead));

    const want = expectedAlerts();
    await eventually(() => alerts.length >= want.length && dead.length >= malformed.length, `${want.length} alerts and ${malformed.length} dead letters`, 120_000);
    // Two more checkpoints: anything still to come (a duplicate) would be committed by then.
    const seen = (await api<JobView>("GET", `/jobs/${deploymentId}`)).json.lastCheckpoint?.id ?? 0;
    await eventually(async () => ((await api<JobView>("GET", `/jobs/${deploymentId}`)).json.lastCheckpoint?.id ?? 0) >= seen + 2, "two more checkpoints");

    const got = alerts.map((a) => (JSON.parse(a.value) as { id: string }).id).sort();
    expect(got).toEqual(want);
    const sample = JSON.parse(alerts[0]?.value ?? "{}") as Record<string, unknown>;
    expect(Object.keys(sample).sort()).toEqual(["amount", "cardId", "id", "ts"]);

    expect(dead).toHaveLength(malformed.length);
    for (const m of malformed) {
      const letters = dead.filter((d) => d.headers[DLQ_HEADERS.partition] === String(m.partition) && d.headers[DLQ_HEADERS.offset] === m.offset);
      expect(letters, `dead letter of ${m.id}`).toHaveLength(1);
      const d = letters[0];
      expect(d?.value).toBe(m.raw);
      expect(d?.headers[DLQ_HEADERS.topic]).toBe(PAYMENTS);
      expect(d?.headers[DLQ_HEADERS.node]).toBe("payments");
      expect(d?.headers[DLQ_HEADERS.exceptionMessage]).toBe(d?.headers[DLQ_HEADERS.reason]);
      expect(d?.headers[DLQ_HEADERS.reason]).toMatch(m.bad === "json" ? /JSON/ : /"ts"/);
    }

    // Still running after the bad records: new payments keep flowing.
    const job = (await api<JobView>("GET", `/jobs/${deploymentId}`)).json;
    expect(job.status).toBe("running");
    expect(job.nodes.payments?.recordsIn).toBe(1000);
    expect(job.nodes.payments?.deadLetters).toBe(50);
    await producePayments(1000, 1100, { malformed: false });
    const more = expectedAlerts();
    await eventually(() => alerts.length >= more.length, `${more.length} alerts after the second wave`, 120_000);
    expect(alerts.map((a) => (JSON.parse(a.value) as { id: string }).id).sort()).toEqual(more);

    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toContain(`keyflow_records_in_total{job="${deploymentId}",node="payments"} 1100`);
    expect(metrics).toContain(`keyflow_dead_letters_total{job="${deploymentId}",node="payments"} 50`);
    expect(metrics).toContain(`keyflow_job_status{job="${deploymentId}",pipeline="${PIPELINE}",status="running"} 1`);
    expect(metrics).toContain(`keyflow_source_lag_records{job="${deploymentId}",node="payments",input="${PAYMENTS}",partition="0"} 0`);

    const stopped = await api<JobView>("DELETE", `/jobs/${deploymentId}`);
    expect(stopped.status).toBe(200);
    expect(stopped.json.status).toBe("stopped");
    const stoppedAt = stopped.json.lastCheckpoint?.id ?? 0;

    // Deployed again, the job resumes from its checkpoint: only the new payments produce alerts.
    await producePayments(1100, 1200, { malformed: false });
    const again = await api<JobView>("POST", "/jobs", {
      deploymentId,
      pipeline: pipelineDoc(PIPELINE, { startFrom: "earliest" }, { id: "alerts", type: "sink.kafka", params: { topic: ALERTS } }),
    });
    expect(again.status).toBe(201);
    const all = expectedAlerts();
    await eventually(() => alerts.length >= all.length, `${all.length} alerts after the redeploy`, 120_000);
    await eventually(async () => ((await api<JobView>("GET", `/jobs/${deploymentId}`)).json.lastCheckpoint?.id ?? 0) >= stoppedAt + 2, "two checkpoints after the redeploy");
    expect(alerts.map((a) => (JSON.parse(a.value) as { id: string }).id).sort()).toEqual(all);
    expect(dead).toHaveLength(malformed.length);
    expect((await api<JobView>("DELETE", `/jobs/${deploymentId}`)).json.status).toBe("stopped");
  });

  // Was the known bug of issue 4 (the transaction committed before its checkpoint was recorded, so a
  // SIGKILL between the two replayed it); the two-phase commit of io/kafka/writer.ts fixed it.
  // Each phase of that commit is crashed in src/job/exactly-once.int.test.ts.
  it("exactly-once across a SIGKILL: the restarted run's output, read committed, has every alert once", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-it-crash-"));
    const name = `crash-${run}`;
    const sinkTopic = `it-${run}-crash-alerts`;
    const file = path.join(dir, "crash.json");
    writeFileSync(file, JSON.stringify(pipelineDoc(name, { startFrom: "earliest" }, { id: "alerts", type: "sink.kafka", params: { topic: sinkTopic, deliveryGuarantee: "exactly-once" } }), null, 2));
    const ckpt = path.join(dir, "ckpt");
    const args = ["run", file, "--checkpoint-dir", ckpt, "--checkpoint-interval", "200"];
    const cliEnv = { KAFKA_BROKERS: brokers.join(",") };
    const alerts: Consumed[] = [];
    const ids = () => alerts.map((a) => (JSON.parse(a.value) as { id: string }).id).sort();

    const first = startCli(args, { env: cliEnv });
    await eventually(async () => (await admin.listTopics()).includes(sinkTopic), "the crash test's sink topic");
    stoppers.push(await collect(sinkTopic, alerts));
    await eventually(() => alerts.length >= expectedAlerts().length, "the alerts of the earlier payments", 120_000);

    // Payments keep coming; the runner is killed in the middle of them.
    for (let chunk = 0; chunk < 30; chunk++) {
      await producePayments(1200 + chunk * 100, 1300 + chunk * 100, { malformed: false });
      if (chunk === 15) first.child.kill("SIGKILL");
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await first.done).signal).toBe("SIGKILL");

    const second = startCli(args, { env: cliEnv });
    const want = expectedAlerts();
    await eventually(() => alerts.length >= want.length, `${want.length} alerts after the restart`, 120_000);
    const chk = () => Math.max(0, ...readdirSync(ckpt).map((n) => Number(/^chk-(\d+)$/.exec(n)?.[1] ?? 0)));
    const now = chk();
    await eventually(() => chk() >= now + 2, "two more checkpoints of the restarted run");
    second.child.kill("SIGINT");
    const ended = await second.done;
    expect(ended.code).toBe(0);
    expect(ended.stdout).toMatch(/resumed from checkpoint \d+/);
    expect(ids()).toEqual(want);
  });

  it("at least once: records flow again as soon as a checkpoint's sinks are flushed, and every record and checkpoint still arrives", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-it-al-"));
    const name = `al-${run}`;
    const sinkTopic = `it-${run}-al-alerts`;
    const file = path.join(dir, "al.json");
    writeFileSync(file, JSON.stringify(pipelineDoc(name, { bounded: true }, { id: "alerts", type: "sink.kafka", params: { topic: sinkTopic, deliveryGuarantee: "at-least-once" } }), null, 2));
    const ckpt = path.join(dir, "ckpt");
    // A checkpoint every 5 ms: most batches meet one, so the loop goes on while the previous one's folder is written.
    const r = await runCli(["run", file, "--checkpoint-dir", ckpt, "--checkpoint-interval", "5"], { env: { KAFKA_BROKERS: brokers.join(","), KEYFLOW_LOG_LEVEL: "debug" } });
    expect(r.code, r.stderr).toBe(0);
    const overlapped = (r.stdout + r.stderr).match(/sinks flushed; records flow again/g) ?? [];
    expect(overlapped.length).toBeGreaterThan(0);
    // No crash: at least once delivers each alert exactly once here.
    const alerts: Consumed[] = [];
    stoppers.push(await collect(sinkTopic, alerts));
    await eventually(() => alerts.length >= expectedAlerts().length, "the at-least-once run's alerts");
    expect(alerts.map((a) => (JSON.parse(a.value) as { id: string }).id).sort()).toEqual(expectedAlerts());
    // Every checkpoint kept was completed: written, then marked committed.
    const kept = readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n));
    expect(kept.length).toBeGreaterThan(0);
    for (const c of kept) expect(readdirSync(path.join(ckpt, c)), c).toContain("_committed");
  });

  it("keyflow run reads the topic as a bounded backtest and exits 0", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-it-bounded-"));
    const name = `bt-${run}`;
    const file = path.join(dir, "backtest.json");
    writeFileSync(file, JSON.stringify(pipelineDoc(name, { bounded: true }, { id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } }), null, 2));

    const r = await runCli(["run", file], { env: { KAFKA_BROKERS: brokers.join(",") } });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`pipeline "${name}" finished`));
    const n = (x: number) => x.toLocaleString("en-US");
    expect(r.stdout).toMatch(new RegExp(`^payments\\s+source\\.kafka\\s+${n(sent.length)}\\s+${n(sent.filter((s) => s.valid).length)}\\s`, "m"));
    expect(r.stdout).toMatch(new RegExp(`dead letters: 50 -> kafka:${name}\\.dlq`));

    const out = readFileSync(path.join(dir, "out", "alerts.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => (JSON.parse(l) as { id: string }).id)
      .sort();
    expect(out).toEqual(expectedAlerts());

    const dead: Consumed[] = [];
    stoppers.push(await collect(`${name}.dlq`, dead));
    await eventually(() => dead.length >= 50, "50 dead letters of the backtest");
    expect(new Set(dead.map((d) => `${d.headers[DLQ_HEADERS.partition]}/${d.headers[DLQ_HEADERS.offset]}`)).size).toBe(50);
  });
});
