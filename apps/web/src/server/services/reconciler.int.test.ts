// The reconciler against a REAL runner service (`keyflow serve`), PostgreSQL (DATABASE_URL) and Kafka
// (KAFKA_BROKERS): a rule job (v1 enforcing, v2 in shadow) and a second rule are deployed, the
// runner is killed with SIGKILL, a new runner starts on the same checkpoint root with no jobs, and
// one reconcile pass brings the rule job back under its id from its newest checkpoint: its keyed
// state (bursts split across the crash alert once their 4th payment arrives), its sources'
// positions (no alert twice on the enforcement topic, read_committed) and its routing. The second
// rule's checkpoint is damaged meanwhile: it is marked failed with the reason, approvers are
// notified, and both outcomes are on the audit trail as the reconciler.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, verifyAuditChain, type Db } from "@keyflow/db";
import { deployVersion } from "./deployments";
import { RECONCILER_ACTOR, reconcile } from "./reconciler";
import { runnerHealth } from "./runner-health";
import { dropTestSchema, startRunnerProcess, velocityRule, type RunnerProcess } from "./runner-process.testing";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("reconciler.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");
const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
if (BROKERS.length === 0) throw new Error("reconciler.int.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
const run = randomBytes(4).toString("hex");
const PAYMENTS = `rc-${run}-payments`;
const ENFORCEMENT = `rc-${run}-enforcement`;
const OTHER = `rc-${run}-other`;
const T0 = Date.UTC(2026, 0, 1);
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-reconcile-"));
// The web app and the runner share a token, as `npm start` gives them.
process.env.KEYFLOW_RUNNER_TOKEN ??= randomBytes(16).toString("hex");
const auth = { authorization: `Bearer ${process.env.KEYFLOW_RUNNER_TOKEN}` };

type Payment = { txId: string; cardId: string; amount: number; ts: number };
const payment = (txId: string, cardId: string, ts: number): Payment => ({ txId, cardId, amount: 900, ts });

/** Before the crash: 300 ordinary payments, 10 whole bursts of 4 (f0…f9), and the first 2 payments of 10 more (s0…s9). */
function before(): Payment[] {
  const out: Payment[] = [];
  for (let i = 0; i < 300; i++) out.push({ txId: `t${i}`, cardId: `c${i % 100}`, amount: 10, ts: T0 + i * 1_000 });
  for (let k = 0; k < 10; k++) for (let j = 0; j < 4; j++) out.push(payment(`f${k}-${j}`, `f${k}`, T0 + k * 20_000 + j * 1_000));
  for (let k = 0; k < 10; k++) for (let j = 0; j < 2; j++) out.push(payment(`s${k}-${j}`, `s${k}`, T0 + 200_000 + k * 1_000 + j * 1_000));
  return out.sort((a, b) => a.ts - b.ts);
}

/** After the restart: the other 2 payments of each s burst (within its 10-minute window), then ordinary ones. */
function after(): Payment[] {
  const out: Payment[] = [];
  for (let k = 0; k < 10; k++) for (let j = 2; j < 4; j++) out.push(payment(`s${k}-${j}`, `s${k}`, T0 + 300_000 + k * 1_000 + j * 1_000));
  for (let i = 0; i < 50; i++) out.push({ txId: `u${i}`, cardId: `u${i}`, amount: 10, ts: T0 + 320_000 + i * 1_000 });
  return out.sort((a, b) => a.ts - b.ts);
}

const kafka = new Kafka({ clientId: `keyflow-reconcile-it-${run}`, brokers: BROKERS, logLevel: logLevel.NOTHING });
let admin: Admin;
let db: Db;
let runner: RunnerProcess | undefined;
const runnerLog = () => runner?.log().slice(-4_000) ?? "";

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 120_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${runnerLog()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

type RunnerJob = { status: string; failure?: string | null; sources: Record<string, { lag: Record<string, number> }>; lastCheckpoint: { id: number } | null; routing?: { modes: Record<string, string> } };

async function runnerJob(jobId: string): Promise<RunnerJob> {
  return (await (await fetch(`${runner?.url}/jobs/${jobId}`, { headers: auth })).json()) as RunnerJob;
}

/** Waits until the job has read everything produced to `input` and committed two checkpoints since. */
async function caughtUp(jobId: string, input: string): Promise<void> {
  const end = Math.max(...(await admin.fetchTopicOffsets(input)).map((o) => Number(o.high)));
  await eventually(async () => {
    const committed = await admin.fetchOffsets({ groupId: `keyflow.${jobId}.payments`, topics: [input] });
    return Number(committed[0]?.partitions[0]?.offset) >= end ? true : undefined;
  }, `job ${jobId} to commit offsets past ${input}'s end ${end}`);
  const at = (await runnerJob(jobId)).lastCheckpoint?.id ?? 0;
  await eventually(async () => {
    const job = await runnerJob(jobId);
    if (job.status === "failed") throw new Error(`job ${jobId} failed: ${job.failure}\n${runnerLog()}`);
    return (job.lastCheckpoint?.id ?? 0) >= at + 2 ? true : undefined;
  }, "two more checkpoints");
}

async function produce(topic: string, records: Payment[]): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: records.map((r) => ({ partition: 0, value: JSON.stringify(r) })) });
  await producer.disconnect();
}

/** The firing payments' ids of every committed alert on `topic` (read_committed), up to its end now. */
async function committedAlerts(topic: string): Promise<string[]> {
  const end = Number((await admin.fetchTopicOffsets(topic)).find((o) => o.partition === 0)?.high ?? 0);
  const ids: string[] = [];
  if (end === 0) return ids;
  let reached = false;
  const consumer = kafka.consumer({ groupId: `rc-${run}-reader-${randomBytes(3).toString("hex")}`, maxWaitTimeInMs: 100, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (Number(payload.lastOffset) + 1 >= end) reached = true;
  });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (Number(m.offset) < end) ids.push(String((JSON.parse(m.value?.toString() ?? "{}") as { event: { txId: string } }).event.txId));
    },
  });
  try {
    await eventually(async () => (reached ? true : undefined), `reading ${topic} to offset ${end}`, 60_000);
  } finally {
    await consumer.disconnect();
  }
  return ids.sort();
}

async function newPipeline(name: string, graphs: ReturnType<typeof velocityRule>[]): Promise<string[]> {
  const pipeline = await db.prisma.pipeline.create({ data: { name, draft: graphs[0] ?? {} } });
  const ids: string[] = [];
  for (const [i, graph] of graphs.entries()) ids.push((await db.prisma.pipelineVersion.create({ data: { pipelineId: pipeline.id, number: i + 1, graph, graphHash: `h${i}`, author: "ada@bank.test" } })).id);
  return ids;
}

beforeAll(async () => {
  const url = new URL(parseDatabaseUrl(DATABASE_URL).connectionString);
  url.searchParams.set("schema", `kf_reconcile_${process.pid}_${Date.now().toString(36)}`);
  db = createDb({ databaseUrl: url.toString() });
  await migrate(db);
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [PAYMENTS, ENFORCEMENT, OTHER].map((topic) => ({ topic, numPartitions: 1 })), waitForLeaders: true });
  runner = await startRunnerProcess(dir, { DATABASE_URL: "", KAFKA_BROKERS: BROKERS.join(",") });
});

afterAll(async () => {
  await runner?.stop();
  await admin?.deleteTopics({ topics: [PAYMENTS, ENFORCEMENT, OTHER, `rc-${run}-rule.shadow`, `rc-${run}-other.shadow`] }).catch(() => undefined);
  await admin?.disconnect();
  await dropTestSchema(db);
  rmSync(dir, { recursive: true, force: true });
});

describe("the reconciler after the runner is killed", () => {
  it("brings a rule job back from its checkpoint (state, positions, routing) and fails an unrestorable one with a notification", async () => {
    const [v1, v2] = (await newPipeline(`rc-${run}-rule`, [velocityRule(`rc-${run}-rule`, 4, PAYMENTS, ENFORCEMENT), velocityRule(`rc-${run}-rule`, 3, PAYMENTS, ENFORCEMENT)])) as [string, string];
    const [other] = (await newPipeline(`rc-${run}-other`, [velocityRule(`rc-${run}-other`, 4, OTHER, `rc-${run}-other-alerts`)])) as [string];
    const url = () => runner?.url ?? "";
    const enforcing = await deployVersion(db.prisma, url(), { versionId: v1, mode: "enforcing" });
    const jobId = enforcing.runnerJobId ?? "";
    await deployVersion(db.prisma, url(), { versionId: v2, mode: "shadow" });
    const broken = await deployVersion(db.prisma, url(), { versionId: other, mode: "shadow" });
    const brokenJob = broken.runnerJobId ?? "";
    await produce(PAYMENTS, before());
    await produce(OTHER, before().slice(0, 50));
    await caughtUp(jobId, PAYMENTS);
    await caughtUp(brokenJob, OTHER);
    expect(await committedAlerts(ENFORCEMENT)).toEqual(Array.from({ length: 10 }, (_, k) => `f${k}-3`).sort());

    // The crash: no final checkpoint, no goodbye. The second rule's checkpoints are damaged meanwhile.
    await runner?.kill("SIGKILL");
    expect((await reconcile(db.prisma, { runnerUrl: url() })).runnerReachable).toBe(false);
    expect(runnerHealth()).toMatchObject({ reachable: false });
    const folder = path.join(dir, "checkpoints", brokenJob);
    for (const chk of readdirSync(folder).filter((n) => n.startsWith("chk-"))) writeFileSync(path.join(folder, chk, "_metadata.json"), "{ not json");
    runner = await startRunnerProcess(dir, { DATABASE_URL: "", KAFKA_BROKERS: BROKERS.join(",") });
    expect(((await (await fetch(`${url()}/jobs`, { headers: auth })).json()) as { jobs: unknown[] }).jobs).toEqual([]);

    const result = await reconcile(db.prisma, { runnerUrl: url() });
    expect(result.runnerReachable).toBe(true);
    expect(runnerHealth()).toMatchObject({ reachable: true });
    expect(result.restarted.map((r) => r.jobId)).toEqual([jobId]);
    expect(result.failed.map((f) => f.jobId)).toEqual([brokenJob]);
    await eventually(async () => ((await runnerJob(jobId)).status === "running" ? true : undefined), "the rule job to run again");
    expect((await runnerJob(jobId)).routing?.modes).toEqual({ "1": "enforcing", "2": "shadow" });
    // A second pass finds nothing to do.
    expect(await reconcile(db.prisma, { runnerUrl: url() })).toMatchObject({ restarted: [], failed: [] });

    // Each s burst's 3rd and 4th payments arrive now: its 4th alerts only if the first two were restored.
    await produce(PAYMENTS, after());
    await caughtUp(jobId, PAYMENTS);
    expect(await committedAlerts(ENFORCEMENT)).toEqual([...Array.from({ length: 10 }, (_, k) => `f${k}-3`), ...Array.from({ length: 10 }, (_, k) => `s${k}-3`)].sort());

    const failed = await db.prisma.deployment.findUniqueOrThrow({ where: { id: broken.id } });
    expect(failed).toMatchObject({ status: "failed", desired: "stopped" });
    expect(failed.failureReason).toMatch(/not restored after a runner restart: .*cannot restore its newest checkpoint/);
    const notes = await db.prisma.notification.findMany({ where: { kind: "restore_failed" } });
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ audience: "approver", actor: RECONCILER_ACTOR });
    expect(notes[0]?.title).toContain(`rc-${run}-other`);
    const audit = await db.prisma.auditEvent.findMany({ where: { action: "reconcile" }, orderBy: { id: "asc" } });
    expect(audit.map((e) => [e.actor, (e.details as { runnerJobId: string; outcome: string }).runnerJobId, (e.details as { outcome: string }).outcome])).toEqual([
      [RECONCILER_ACTOR, jobId, "restarted"],
      [RECONCILER_ACTOR, brokenJob, "failed"],
    ]);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ ok: true });
    // The deployments that run are still the ones that should.
    const live = await db.prisma.deployment.findMany({ where: { runnerJobId: jobId, desired: "running" }, select: { status: true, mode: true } });
    expect(live.map((d) => `${d.mode} ${d.status}`).sort()).toEqual(["enforcing running", "shadow running"]);
  });
});
