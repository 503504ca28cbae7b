// Savepoints, restore and rescale through the runner's HTTP API, against the REAL broker
// (KAFKA_BROKERS): Kafka -> keyBy -> velocity -> Kafka (exactly-once) deployed at parallelism 2,
// stopped with a savepoint, restored at parallelism 1 and at 3 (key groups redistributed): the
// output before the savepoint plus each restored run's output equals one uninterrupted run's, as a
// multiset. A pipeline whose state no longer fits the savepoint is refused, naming the node.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { readCommitted as readCommittedTopic, requestJson, requireKafkaBrokers } from "../io/kafka/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv, type RunnerEnv } from "../env";
import { createLogger } from "../log";
import { createRunnerService, type RunnerService } from "./main";
import type { JobView } from "./jobs";
import { eventually, runCli } from "../../test/run-cli";
import { writeFileSync } from "node:fs";

const brokers = requireKafkaBrokers();

const run = randomBytes(4).toString("hex");
const PAYMENTS = `sp-${run}-payments`;
const EVENTS = 120_000;
const CARDS = 1_000;
/** Recent event times: sink.kafka stamps messages with them, and the broker deletes (and rolls) by timestamp (24 h in `npm run services`). */
const T0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 4 * 3_600_000;
const kafka = new Kafka({ clientId: `keyflow-sp-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
let service: RunnerService;
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-sp-"));

function pipeline(sinkTopic: string, change: (nodes: Array<{ id: string; type: string; params: Record<string, unknown> }>) => void = () => {}) {
  const nodes: Array<{ id: string; type: string; params: Record<string, unknown> }> = [
    { id: "payments", type: "source.kafka", params: { topic: PAYMENTS, bounded: true, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1000 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "velocity", type: "velocity", params: { threshold: 4, windowMs: "10m", idField: "txId" } },
    { id: "alerts", type: "sink.kafka", params: { topic: sinkTopic, deliveryGuarantee: "exactly-once" } },
  ];
  change(nodes);
  return {
    format: "keyflow.pipeline/v1",
    name: `sp-${run}`,
    settings: { checkpointIntervalMs: 300, parallelism: 2 },
    nodes,
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: nodes[2]!.id },
      { from: nodes[2]!.id, to: "alerts" },
    ],
  };
}

function readCommitted(topic: string): Promise<string[]> {
  return readCommittedTopic(kafka, admin, topic);
}

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

async function finished(id: string): Promise<JobView> {
  return eventually(async () => {
    const v = (await api<JobView>("GET", `/jobs/${id}`)).json;
    if (v.status === "failed" || v.status === "restarting") throw new Error(`job ${id} ${v.status}: ${v.failure}`);
    return v.status === "finished" ? v : undefined;
  }, `job ${id} to finish`, 150_000);
}

let reference: string[] = [];

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: PAYMENTS, numPartitions: 1 }], waitForLeaders: true });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let at = 0; at < EVENTS; at += 5_000) {
    const messages = [];
    for (let i = at; i < at + 5_000; i++) messages.push({ value: JSON.stringify({ txId: `t${i}`, cardId: `c${(i * 7_919) % CARDS}`, amount: i % 300, ts: T0 + i * 100 }) });
    await producer.send({ topic: PAYMENTS, acks: -1, messages });
  }
  await producer.disconnect();
  // The uninterrupted run, in one thread.
  const file = path.join(dir, "reference.json");
  const doc = pipeline(`sp-${run}-reference`);
  doc.settings.parallelism = 1;
  writeFileSync(file, JSON.stringify(doc));
  const r = await runCli(["run", file, "--checkpoint-dir", path.join(dir, "ckpt-reference")], { env: { KAFKA_BROKERS: brokers.join(",") } });
  expect(r.code, r.stderr).toBe(0);
  reference = await readCommitted(`sp-${run}-reference`);
  expect(reference.length).toBeGreaterThan(10_000);

  const serviceEnv: RunnerEnv = { ...readEnv(), runnerPort: 0, runnerHost: "127.0.0.1", checkpointRoot: path.join(dir, "checkpoints"), dataDir: path.join(dir, "data") };
  service = await createRunnerService(serviceEnv, createLogger("warn"));
});

afterAll(async () => {
  await service?.close();
  await admin?.disconnect();
});

describe("savepoints, restore and rescale through the HTTP API", () => {
  it("savepoint at parallelism 2, restore at 1 and at 3: before + after equals the uninterrupted run; a changed graph is refused", async () => {
    const deployed = await api<JobView>("POST", "/jobs", { deploymentId: `sp-${run}-a`, pipeline: pipeline(`sp-${run}-a`) });
    expect(deployed.status, JSON.stringify(deployed.json)).toBe(201);
    // Held to about 25 s of input until the stop: unthrottled, a fast run read all 120 000
    // records before the savepoint CLI had started, and the stop found nothing left to cut.
    expect((await api("POST", `/jobs/sp-${run}-a/nodes/alerts/throttle`, { recordsPerSecond: 5_000 })).status).toBe(200);
    await eventually(async () => ((await api<JobView>("GET", `/jobs/sp-${run}-a`)).json.lastCheckpoint?.id ?? 0) >= 2, "two checkpoints of the first job", 60_000, 20);

    // A savepoint of the running job (`keyflow savepoint`, over POST /jobs/:id/savepoint): a
    // complete, committed checkpoint folder of its own.
    const sp = await runCli(["savepoint", `sp-${run}-a`, "--runner", service.url, "--dir", path.join(dir, "checkpoints", "savepoints")], { env: { KEYFLOW_RUNNER_TOKEN: service.token } });
    expect(sp.code, sp.stderr).toBe(0);
    const spPath = sp.stdout.trim();
    expect(spPath.startsWith(path.join(dir, "checkpoints", "savepoints", "savepoint-"))).toBe(true);
    expect(existsSync(path.join(spPath, "_committed"))).toBe(true);
    const meta = JSON.parse(readFileSync(path.join(spPath, "_metadata.json"), "utf8")) as { parallelism: number; savepointOf: { jobId: string } };
    expect(meta.parallelism).toBe(2);
    expect(meta.savepointOf.jobId).toBe(`sp-${run}-a`);

    // Stop with a savepoint: the first job's output ends exactly at it. The throttle is lifted first,
    // since a stop lets the sink drain what is in flight.
    expect((await api("POST", `/jobs/sp-${run}-a/nodes/alerts/throttle`, { recordsPerSecond: null })).status).toBe(200);
    const stopped = await api<JobView & { savepointPath: string }>("POST", `/jobs/sp-${run}-a/stop?savepoint=true`, {});
    expect(stopped.status, JSON.stringify(stopped.json)).toBe(200);
    expect(stopped.json.status).toBe("stopped");
    const savepoint = stopped.json.savepointPath;
    const before = await readCommitted(`sp-${run}-a`);
    expect(before.length).toBeLessThan(reference.length);

    // At parallelism 1 through the API, at 3 through `keyflow restore`.
    const p1 = `sp-${run}-p1`;
    const restored = await api<JobView>("POST", "/jobs", { deploymentId: p1, pipeline: pipeline(p1), restoreFrom: savepoint, parallelism: 1 });
    expect(restored.status, JSON.stringify(restored.json)).toBe(201);
    await finished(p1);
    expect([...before, ...(await readCommitted(p1))].sort(), "parallelism 1").toEqual(reference);
    const p3 = `sp-${run}-p3`;
    const p3File = path.join(dir, "p3.json");
    writeFileSync(p3File, JSON.stringify(pipeline(p3)));
    const cli = await runCli(["restore", savepoint, p3File, "--runner", service.url, "--job-id", p3, "--parallelism", "3"], { env: { KEYFLOW_RUNNER_TOKEN: service.token } });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`job "${p3}" deployed from ${savepoint} at parallelism 3`);
    await finished(p3);
    expect([...before, ...(await readCommitted(p3))].sort(), "parallelism 3").toEqual(reference);
    // And `keyflow run --restore`, outside the service, at parallelism 2.
    const local = `sp-${run}-local`;
    const localFile = path.join(dir, "local.json");
    writeFileSync(localFile, JSON.stringify(pipeline(local)));
    const ran = await runCli(["run", localFile, "--restore", savepoint, "--checkpoint-dir", path.join(dir, "ckpt-local")], { env: { KAFKA_BROKERS: brokers.join(",") } });
    expect(ran.code, ran.stderr).toBe(0);
    expect([...before, ...(await readCommitted(local))].sort(), "keyflow run --restore").toEqual(reference);

    // Graphs the savepoint's state no longer fits: refused before anything runs, naming the node.
    const removed = await api<{ error: string; issues: string[] }>("POST", "/jobs", {
      deploymentId: `sp-${run}-removed`,
      pipeline: pipeline(`sp-${run}-removed`, (nodes) => (nodes[2]!.id = "velocity2")),
      restoreFrom: savepoint,
    });
    expect(removed.status).toBe(400);
    expect(removed.json.issues.join("\n")).toMatch(/node "velocity" \(velocity\) has state in .* but is not in the pipeline.*allowNonRestoredState/);
    const retyped = await api<{ issues: string[] }>("POST", "/jobs", {
      deploymentId: `sp-${run}-retyped`,
      pipeline: pipeline(`sp-${run}-retyped`, (nodes) => Object.assign(nodes[2]!, { type: "threshold", params: { expression: "amount", above: 100, recoverBelow: 50, idField: "txId" } })),
      restoreFrom: savepoint,
    });
    expect(retyped.status).toBe(400);
    expect(retyped.json.issues.join("\n")).toMatch(/node "velocity": its state in .* is velocity state, the pipeline now makes it a threshold/);
    const relaid = await api<{ issues: string[] }>("POST", "/jobs", {
      deploymentId: `sp-${run}-relaid`,
      pipeline: pipeline(`sp-${run}-relaid`, (nodes) => (nodes[2]!.params.mode = "eager")),
      restoreFrom: savepoint,
    });
    expect(relaid.status).toBe(400);
    expect(relaid.json.issues.join("\n")).toMatch(/node "velocity" \(velocity\): param "mode" changed/);
    const rekeyed = await api<{ issues: string[] }>("POST", "/jobs", {
      deploymentId: `sp-${run}-rekeyed`,
      pipeline: pipeline(`sp-${run}-rekeyed`, (nodes) => (nodes[1]!.params.field = "txId")),
      restoreFrom: savepoint,
    });
    expect(rekeyed.status).toBe(400);
    expect(rekeyed.json.issues.join("\n")).toMatch(/node "velocity" \(velocity\): its state in .* is keyed by "cardId", the pipeline now keys it by "txId"/);
    // Explicitly dropping the removed node's state is allowed.
    const dropped = await api<JobView>("POST", "/jobs", {
      deploymentId: `sp-${run}-dropped`,
      pipeline: pipeline(`sp-${run}-dropped`, (nodes) => (nodes[2]!.id = "velocity2")),
      restoreFrom: savepoint,
      allowNonRestoredState: true,
    });
    expect(dropped.status, JSON.stringify(dropped.json)).toBe(201);
    await finished(`sp-${run}-dropped`);
  });
});
