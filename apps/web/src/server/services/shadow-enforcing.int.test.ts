// Shadow beside enforcement on the REAL broker (KAFKA_BROKERS) and PostgreSQL (DATABASE_URL), through
// the app's own tRPC route and a real runner service: one rule's version 1 enforcing and version 2
// in shadow as branches of ONE rule job over the same input topic (the shadow writes only
// `<rule>.shadow`, each alert tagged with its version; the input is read once, so a malformed line
// is one dead letter); the same graph in both modes gives the same alerts; the comparison an
// approver reads; the early-promotion reason; promotion and rollback (approved, and in an
// emergency) as routing switches of that job at a checkpoint boundary, audited with the checkpoint.
// (Exactly-once across a switch under load: apps/runner/src/job/promotion-switch.int.test.ts.)
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import superjson from "superjson";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, type Db, type UserRole } from "@keyflow/db";
import { hashPassword } from "../auth/password";
import { SESSION_COOKIE } from "../auth/session";
import type { Comparison } from "./comparison";
import { dropTestSchema, startRunnerProcess, velocityRule, type RunnerProcess } from "./runner-process.testing";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("shadow-enforcing.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");
const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
if (BROKERS.length === 0) throw new Error("shadow-enforcing.int.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
const ORIGIN = "http://localhost:3000";
const PASSWORD = "correct horse battery staple";
const run = randomBytes(4).toString("hex");
const PAYMENTS = `sh-${run}-payments`;
const ENFORCEMENT = `sh-${run}-enforcement`;
const T0 = Date.UTC(2026, 0, 1);
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-shadow-"));

// The stream: 2 000 ordinary payments on 500 cards (a card every 500 s: at most 2 in a 10-minute
// window), 20 fraud bursts of 4 payments (isFraud true) and 10 legitimate bursts of 3 (isFraud
// false), 10 s apart, and one line that is not JSON. Velocity at threshold 4 alerts on each fraud
// burst's 4th payment (20 alerts, all fraud); at threshold 3 on the 3rd and 4th of each fraud burst
// and the 3rd of each legitimate one (50 alerts, 40 fraud). 80 payments are fraud.
function payments(): string[] {
  const records: { txId: string; cardId: string; amount: number; ts: number; isFraud: boolean }[] = [];
  for (let i = 0; i < 2_000; i++) records.push({ txId: `t${i}`, cardId: `c${i % 500}`, amount: (i * 31) % 500, ts: T0 + i * 1_000, isFraud: false });
  for (let k = 0; k < 30; k++) {
    const fraud = k < 20;
    for (let j = 0; j < (fraud ? 4 : 3); j++) records.push({ txId: `${fraud ? "f" : "b"}${k}-${j}`, cardId: `${fraud ? "f" : "b"}${k}`, amount: 900, ts: T0 + k * 60_000 + 500 + j * 10_000, isFraud: fraud });
  }
  records.sort((a, b) => a.ts - b.ts);
  const lines = records.map((r) => JSON.stringify(r));
  lines.splice(1_000, 0, "this line is not JSON");
  return lines;
}

/** Each rule enforces into a topic of its own: two jobs never write one output (issue 35 point 5). */
function rule(name: string, threshold: number, input = PAYMENTS, enforcement = ENFORCEMENT) {
  return velocityRule(name, threshold, input, enforcement);
}

type Route = { GET?: (req: Request) => Promise<Response>; POST?: (req: Request) => Promise<Response> };
type Data<T> = { result: { data: { json: T; meta?: unknown } } };
type Deployment = { id: string; runnerJobId: string | null; status: string; mode: string; versionId: string };

const kafka = new Kafka({ clientId: `keyflow-shadow-it-${run}`, brokers: BROKERS, logLevel: logLevel.NOTHING });
let admin: Admin;
/** A real runner process (`keyflow serve`) on a free port, its own checkpoint folder, no database. */
let runner: RunnerProcess | undefined;
const service = { url: "" };
const runnerLog = () => runner?.log() ?? "";

async function startRunner(): Promise<void> {
  runner = await startRunnerProcess(dir, { DATABASE_URL: "", KAFKA_BROKERS: BROKERS.join(",") });
  service.url = runner.url;
}
let db: Db;
let trpcRoute: Route;
let loginRoute: Route;
const cookies: Record<string, string> = {};

async function call<T>(kind: "query" | "mutation", procedure: string, input: unknown, as: string): Promise<{ status: number; data: T; error: { message: string; code: string | undefined } | null }> {
  const headers: Record<string, string> = { host: "localhost:3000", cookie: `${SESSION_COOKIE}=${cookies[as]}` };
  const req =
    kind === "query"
      ? new Request(`${ORIGIN}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`, { method: "GET", headers })
      : new Request(`${ORIGIN}/api/trpc/${procedure}`, { method: "POST", headers: { "content-type": "application/json", "x-keyflow-csrf": "1", origin: ORIGIN, ...headers }, body: JSON.stringify(superjson.serialize(input)) });
  const handler = kind === "query" ? trpcRoute.GET : trpcRoute.POST;
  if (!handler) throw new Error("the tRPC route has no handler for that method");
  const res = await handler(req);
  const body = (await res.json()) as Data<unknown> & { error?: { json: { message: string; data?: { code?: string } } } };
  if (body.error) return { status: res.status, data: undefined as T, error: { message: body.error.json.message, code: body.error.json.data?.code } };
  return { status: res.status, data: superjson.deserialize(body.result.data as never) as T, error: null };
}

async function ok<T>(kind: "query" | "mutation", procedure: string, input: unknown, as: string): Promise<T> {
  const res = await call<T>(kind, procedure, input, as);
  if (res.error) throw new Error(`${procedure} as ${as}: ${res.error.code} ${res.error.message}`);
  return res.data;
}

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 120_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

type RunnerJob = { status: string; failure?: string; sources: Record<string, { lag: Record<string, number> }>; lastCheckpoint: { id: number } | null; routing?: { modes: Record<string, string> } };

async function runnerJob(jobId: string | null): Promise<RunnerJob> {
  return (await (await fetch(`${service.url}/jobs/${jobId}`, { headers: { authorization: `Bearer ${runner?.token ?? ""}` } })).json()) as RunnerJob;
}

/**
 * Waits until the rule job has read its input to the end and committed two more checkpoints, so the
 * topics hold all its output. A restart is the runner's own recovery (e.g. a fresh broker's group
 * coordinator still loading when the job joins): the job resumes from its checkpoint, and the
 * exactly-once sinks keep the counts below exact.
 */
async function caughtUp(deployment: Deployment, input?: string): Promise<void> {
  if (input !== undefined) {
    // Lag alone can read 0 from a fetch made before the input was produced (a job just restarted
    // with a new version): wait for the job's committed offsets, which follow completed
    // checkpoints, to pass the input's end.
    const end = Math.max(...(await admin.fetchTopicOffsets(input)).map((o) => Number(o.high)));
    await eventually(async () => {
      const committed = await admin.fetchOffsets({ groupId: `keyflow.${deployment.runnerJobId}.payments`, topics: [input] });
      return Number(committed[0]?.partitions[0]?.offset) >= end ? true : undefined;
    }, `deployment ${deployment.id} (${deployment.mode}) to commit offsets past ${input}'s end ${end}`);
  }
  const at = await eventually(async () => {
    const job = await runnerJob(deployment.runnerJobId);
    if (job.status === "failed") throw new Error(`job of deployment ${deployment.id} ${job.status}: ${job.failure}\n${runnerLog()}`);
    const lag = Object.values(job.sources.payments?.lag ?? {});
    return lag.length > 0 && lag.every((n) => n === 0) ? (job.lastCheckpoint?.id ?? 0) : undefined;
  }, `deployment ${deployment.id} (${deployment.mode}) to read its input`);
  await eventually(async () => (((await runnerJob(deployment.runnerJobId)).lastCheckpoint?.id ?? 0) >= at + 2 ? true : undefined), "two more checkpoints");
}

/** The stream below into a new topic (the versions read it once they all run). */
async function produce(topic: string): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: payments().map((value) => ({ partition: 0, value })) });
  await producer.disconnect();
}

/** Every committed message of `topic` up to its current end (read_committed), as parsed values. */
async function readCommitted(topic: string): Promise<Record<string, unknown>[]> {
  return (await readCommittedText(topic)).map((v) => JSON.parse(v) as Record<string, unknown>);
}

/**
 * How the last read of each topic went (its end offsets and the batches that reached it), for the
 * failure messages: a failing CI run keeps only these. (They showed reads starting past the first
 * transactions: the broker's 24 h time retention had deleted alerts stamped 2026-01-01, which
 * scripts/services/start.sh now prevents.)
 */
const readTraces = new Map<string, string>();
const traceOf = (topic: string) => `read of ${topic}: ${readTraces.get(topic) ?? "none"}\nrunner log tail:\n${runnerLog().slice(-4_000)}`;

/** The committed messages' values as text (dead letters carry the refused bytes, not JSON). */
async function readCommittedText(topic: string): Promise<string[]> {
  const ends = new Map<number, number>();
  for (const o of await admin.fetchTopicOffsets(topic)) if (Number(o.high) > Number(o.low)) ends.set(o.partition, Number(o.high));
  const out: string[] = [];
  if (ends.size === 0) return out;
  const reached = new Set<number>();
  const consumer = kafka.consumer({ groupId: `keyflow-it-reader-${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 100, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  // Batch ends include batches of transaction markers only, which never reach eachBatch.
  const batches: string[] = [];
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    batches.push(`p${payload.partition} ${payload.firstOffset}..${payload.lastOffset} (${payload.batchSize} delivered, high ${payload.highWatermark})`);
    if (Number(payload.lastOffset) + 1 >= (ends.get(payload.partition) ?? 0)) reached.add(payload.partition);
  });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (Number(m.offset) < (ends.get(batch.partition) ?? 0)) out.push(m.value?.toString("utf8") ?? "null");
    },
  });
  try {
    await eventually(async () => ([...ends.keys()].every((p) => reached.has(p)) ? true : undefined), `reading ${topic} to its end`);
  } finally {
    await consumer.disconnect();
    readTraces.set(topic, `ends ${JSON.stringify([...ends])}, ${out.length} values, batches ${batches.join("; ")}`);
  }
  return out;
}

const txIdOf = (alert: Record<string, unknown>) => String((alert.event as { txId: string }).txId);
const topicExists = async (topic: string) => (await admin.listTopics()).includes(topic);

async function user(email: string, role: UserRole) {
  await db.prisma.user.create({ data: { email, name: email.split("@")[0] ?? email, role, passwordHash: await hashPassword(PASSWORD) } });
  const post = loginRoute.POST;
  if (!post) throw new Error("no POST /api/auth/login");
  const res = await post(new Request(`${ORIGIN}/api/auth/login`, { method: "POST", headers: { host: "localhost:3000", origin: ORIGIN, "content-type": "application/json", "x-keyflow-csrf": "1" }, body: JSON.stringify({ email, password: PASSWORD }) }));
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  cookies[role === "analyst" ? "ada" : email.split("@")[0] ?? email] = cookie?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
}

/** A pipeline with its versions saved (by the analyst), in order. */
async function pipelineWithVersions(name: string, thresholds: number[]): Promise<{ pipelineId: string; versionIds: string[] }> {
  const created = await ok<{ id: string }>("mutation", "pipeline.create", { name, graph: rule(name, thresholds[0] ?? 4) }, "ada");
  const versionIds: string[] = [];
  for (const threshold of thresholds) {
    const saved = await ok<{ version: { id: string } }>("mutation", "pipeline.saveVersion", { pipelineId: created.id, graph: rule(name, threshold), message: `threshold ${threshold}` }, "ada");
    versionIds.push(saved.version.id);
  }
  return { pipelineId: created.id, versionIds };
}

/** Asked by the analyst (with a reason: these versions are new to shadow), approved by Pat. */
async function approve(versionId: string): Promise<string> {
  const asked = await ok<{ id: string }>("mutation", "promotion.request", { versionId, reason: "integration test: no time in shadow" }, "ada");
  await ok("mutation", "promotion.approve", { requestId: asked.id, comment: "numbers checked" }, "pat");
  return asked.id;
}

beforeAll(async () => {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  url.searchParams.set("schema", `kf_shadow_${process.pid}_${Date.now().toString(36)}`);
  db = createDb({ databaseUrl: url.toString() });
  await migrate(db);
  (globalThis as typeof globalThis & { __keyflowDb?: Promise<Db> }).__keyflowDb = Promise.resolve(db);
  await startRunner();
  // The route handlers read RUNNER_URL and KAFKA_BROKERS for every request (server/env.ts).
  process.env.RUNNER_URL = service.url;
  trpcRoute = (await import("../../app/api/trpc/[trpc]/route")) as Route;
  loginRoute = (await import("../../app/api/auth/login/route")) as Route;
  await user("ada@bank.test", "analyst");
  await user("pat@bank.test", "approver");
  await user("sam@bank.test", "approver");

  admin = kafka.admin();
  await admin.connect();
  // Empty until the versions run (a job waits for its input topic to exist before it runs).
  await admin.createTopics({ topics: [PAYMENTS, `sh-${run}-a-payments`].map((topic) => ({ topic, numPartitions: 1 })), waitForLeaders: true });
}, 180_000);

afterAll(async () => {
  await runner?.stop();
  rmSync(dir, { recursive: true, force: true });
  await admin?.disconnect();
  (globalThis as typeof globalThis & { __keyflowDb?: Promise<Db> }).__keyflowDb = undefined;
  await dropTestSchema(db);
});

describe("shadow beside enforcement on the real broker, as branches of one rule job", () => {
  const B = `sh-${run}-b`;
  let b: { pipelineId: string; versionIds: string[] };
  let enforcingV1: Deployment;
  let shadowV2: Deployment;
  const fraudBursts = Array.from({ length: 20 }, (_, k) => `f${k}-3`).sort();

  it("runs version 1 enforcing and version 2 in shadow in one job over one topic: the shadow writes only <rule>.shadow, tagged with its version", async () => {
    b = await pipelineWithVersions(B, [4]);
    const [v1] = b.versionIds as [string];
    const early = await call("mutation", "promotion.request", { versionId: v1, reason: "" }, "ada");
    expect(early.error?.code).toBe("BAD_REQUEST");
    expect(early.error?.message).toMatch(/in shadow 0\.0 days \(never deployed in shadow\), under the policy's 14: promoting it earlier needs a written reason/);
    await approve(v1);
    enforcingV1 = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v1, mode: "enforcing", reason: "v1 enforces" }, "pat");
    expect(enforcingV1.runnerJobId).toMatch(/^rule-/);
    // Version 2 (threshold 3) is saved while v1 runs (which voids v1's approval: it was for another
    // graph) and joins the running job in shadow (through a savepoint: v1 keeps its state).
    const saved = await ok<{ version: { id: string } }>("mutation", "pipeline.saveVersion", { pipelineId: b.pipelineId, graph: rule(B, 3), message: "threshold 3" }, "ada");
    const v2 = saved.version.id;
    b.versionIds.push(v2);
    shadowV2 = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v2, mode: "shadow" }, "ada");
    expect([enforcingV1.status, shadowV2.status]).toEqual(["running", "running"]);
    expect(shadowV2.runnerJobId).toBe(enforcingV1.runnerJobId);
    expect((await runnerJob(enforcingV1.runnerJobId)).routing?.modes).toEqual({ "1": "enforcing", "2": "shadow" });
    // The input arrives once both versions run.
    await produce(PAYMENTS);
    await caughtUp(enforcingV1, PAYMENTS);

    const enforced = await readCommitted(ENFORCEMENT);
    const shadow = await readCommitted(`${B}.shadow`);
    // Threshold 4 (enforcing): each fraud burst's 4th payment, exactly once. Threshold 3 (shadow): 50 alerts, none of them in the enforcement topic.
    expect(enforced.map(txIdOf).sort()).toEqual(fraudBursts);
    expect(shadow.map(txIdOf).sort()).toEqual([...Array.from({ length: 20 }, (_, k) => [`f${k}-2`, `f${k}-3`]).flat(), ...Array.from({ length: 10 }, (_, k) => `b${20 + k}-2`)].sort());
    expect(new Set(enforced.map((a) => a.ruleVersion))).toEqual(new Set([1]));
    expect(new Set(shadow.map((a) => a.ruleVersion))).toEqual(new Set([2]));
    // The input is read once for both versions: the line that is not JSON is one dead letter.
    expect(await readCommittedText(`${B}.dlq`)).toEqual(["this line is not JSON"]);
    expect(await topicExists(`${B}.dlq.shadow`)).toBe(false);
    // One checkpoint folder and one consumer group for the rule job (committed offsets past the input).
    expect(existsSync(path.join(dir, "checkpoints", enforcingV1.runnerJobId ?? ""))).toBe(true);
    const offsets = await admin.fetchOffsets({ groupId: `keyflow.${enforcingV1.runnerJobId}.payments`, topics: [PAYMENTS] });
    expect(Number(offsets[0]?.partitions[0]?.offset)).toBeGreaterThan(2_000);
    expect(await topicExists(`${B}.shadow.alerts`)).toBe(false);
  });

  it("one graph in both modes makes the same decisions: the same alerts by record id, with the same evidence", async () => {
    const A = `sh-${run}-a`;
    const input = `${A}-payments`;
    const enforcement = `${A}-enforcement`;
    const created = await ok<{ id: string }>("mutation", "pipeline.create", { name: A, graph: rule(A, 4, input, enforcement) }, "ada");
    const v1 = (await ok<{ version: { id: string } }>("mutation", "pipeline.saveVersion", { pipelineId: created.id, graph: rule(A, 4, input, enforcement), message: "threshold 4" }, "ada")).version.id;
    await approve(v1);
    const enforcing = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v1, mode: "enforcing", reason: "same graph, both modes" }, "pat");
    // Version 2: the same graph (a description apart), in shadow beside it.
    const v2 = (await ok<{ version: { id: string } }>("mutation", "pipeline.saveVersion", { pipelineId: created.id, graph: { ...rule(A, 4, input, enforcement), description: "the same rule again" }, message: "same graph" }, "ada")).version.id;
    const shadow = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v2, mode: "shadow" }, "ada");
    expect(shadow.runnerJobId).toBe(enforcing.runnerJobId);
    await produce(input);
    await caughtUp(enforcing, input);
    const shadowAlerts = await readCommitted(`${A}.shadow`);
    const enforcedNow = await readCommitted(enforcement);
    // The enforcing branch wrote its 20 alerts to the enforcement topic; the shadow branch none.
    expect(enforcedNow.length, traceOf(enforcement)).toBe(20);
    const canonical = (alerts: Record<string, unknown>[]) => alerts.map(({ ruleVersion: _v, ...x }) => JSON.stringify(x)).sort();
    expect(canonical(shadowAlerts)).toEqual(canonical(enforcedNow));

    const same = await ok<Comparison>("query", "comparison.compare", { pipelineId: created.id, newVersionId: v2, oldVersionId: v1 }, "ada");
    expect(same.stats.counts).toMatchObject({ both: 20, onlyNew: 0, onlyOld: 0 });

    // The job has an enforcing branch: stopping even its shadow branch (a routing switch) is an approver's.
    const refused = await call("mutation", "deployment.stop", { deploymentId: shadow.id, reason: "seen enough" }, "ada");
    expect(refused.error).toMatchObject({ code: "FORBIDDEN", message: expect.stringMatching(/deployment\.stop needs the approver role: rule job .* has an enforcing branch \(version 1\); ada@bank\.test is an analyst/) });
    // Stopping the shadow deployment stops its branch only: the job runs on, v1 still enforcing.
    const stopped = await ok<{ deployment: { status: string }; jobStatus: string; result: string }>("mutation", "deployment.stop", { deploymentId: shadow.id, reason: "seen enough" }, "pat");
    expect(stopped).toMatchObject({ deployment: { status: "stopped" }, jobStatus: "running", result: expect.stringContaining(`Rule ${A}: version 1 still enforces.`) });
    expect((await runnerJob(enforcing.runnerJobId)).routing?.modes).toEqual({ "1": "enforcing", "2": "stopped" });
    expect(await db.prisma.deployment.findUniqueOrThrow({ where: { id: enforcing.id } })).toMatchObject({ status: "running" });
  });

  it("compares shadow version 2 with enforcing version 1 over the same events: counts, per hour, samples, precision and recall", async () => {
    const result = await ok<Comparison>("query", "comparison.compare", { pipelineId: b.pipelineId, samples: 2 }, "ada");
    expect(result.new).toMatchObject({ number: 2, mode: "shadow", topics: [`${B}.shadow`], idField: "txId" });
    expect(result.old).toMatchObject({ number: 1, mode: "enforcing", topics: [ENFORCEMENT] });
    expect(result.stats.counts, JSON.stringify({ missing: result.missingTopics, truncated: result.truncatedTopics, deleted: result.deletedTopics, unreadable: result.unreadable })).toEqual({ both: 20, onlyNew: 30, onlyOld: 0, newTotal: 50, oldTotal: 20 });
    expect(result.stats.repeated).toEqual({ new: 0, old: 0 });
    expect(result.stats.perHour.reduce((s, h) => s + h.new, 0)).toBe(50);
    expect(result.stats.perHour.reduce((s, h) => s + h.old, 0)).toBe(20);
    expect(result.stats.samples.onlyNew).toHaveLength(2);
    expect(result.stats.samples.onlyOld).toHaveLength(0);
    const sample = result.stats.samples.both[0];
    expect(sample?.new.value).toMatchObject({ count: 4, evidence: { total: 4 } });
    expect(txIdOf(sample?.new.value ?? {})).toBe(txIdOf(sample?.old.value ?? {}));
    // Labels: 80 fraud payments in the input; v2 40 of 50 alerts fraud, v1 20 of 20.
    expect(result.stats.scores).toMatchObject({ labelField: "isFraud", fraudInInput: 80, new: { labelled: 50, truePositives: 40, precision: 0.8, recall: 0.5 }, old: { labelled: 20, truePositives: 20, precision: 1, recall: 0.25 } });
    expect(result.unreadable.count).toBe(0);
    expect(result.deletedTopics).toEqual([]);
  });

  it("asks for a written reason to promote before the policy's days in shadow; the promotion switches the job's branches at one checkpoint, audited", async () => {
    const [v1, v2] = b.versionIds as [string, string];
    const status = await ok<{ policyDays: number; versions: { number: number; days: number; early: boolean; since: Date | null }[] }>("query", "promotion.status", { pipelineId: b.pipelineId }, "pat");
    expect(status.policyDays).toBe(14);
    expect(status.versions.find((v) => v.number === 2)).toMatchObject({ early: true });
    expect(status.versions.find((v) => v.number === 2)?.since).toBeInstanceOf(Date);
    const refused = await call("mutation", "promotion.request", { versionId: v2, reason: "soon" }, "ada");
    expect(refused.error?.message).toMatch(/version 2 has been in shadow 0\.0 days, under the policy's 14: promoting it earlier needs a written reason/);
    const asked = await ok<{ id: string }>("mutation", "promotion.request", { versionId: v2, reason: "chargebacks are rising on this pattern" }, "ada");
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "request", subjectId: asked.id } });
    expect(event).toMatchObject({ actor: "ada@bank.test", reason: "chargebacks are rising on this pattern", details: { number: 2, policyDays: 14, early: true } });
    // The approver's bundle: version 2's state fits the running job's newest checkpoint.
    const compat = await ok<{ ruleJobId: string; compatible: boolean; problems: string[]; checkpoint: string }>("query", "promotion.compat", { versionId: v2 }, "pat");
    expect(compat).toMatchObject({ ruleJobId: enforcingV1.runnerJobId, compatible: true, problems: [] });
    await ok("mutation", "promotion.approve", { requestId: asked.id, comment: "precision 0.8 is acceptable" }, "pat");
    const promoted = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v2, mode: "enforcing", reason: `promotion ${asked.id}` }, "pat");
    expect(promoted).toMatchObject({ versionId: v2, mode: "enforcing", status: "running", runnerJobId: enforcingV1.runnerJobId });
    expect((await runnerJob(promoted.runnerJobId)).routing?.modes).toEqual({ "1": "shadow", "2": "enforcing" });
    // The rows: v2's shadow and v1's enforcing rows closed at the switch, v1 in shadow now.
    expect(await db.prisma.deployment.findUniqueOrThrow({ where: { id: shadowV2.id } })).toMatchObject({ status: "stopped" });
    expect(await db.prisma.deployment.findUniqueOrThrow({ where: { id: enforcingV1.id } })).toMatchObject({ status: "stopped" });
    expect(await db.prisma.deployment.count({ where: { pipelineId: b.pipelineId, versionId: v1, mode: "shadow", status: "running" } })).toBe(1);
    const audited = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "promote", subjectId: promoted.id } });
    const details = audited.details as { switch: { checkpointId: number; sources: { payments: { next: Record<string, string> } }; before: unknown; after: unknown } };
    expect(details.switch).toMatchObject({ before: { "1": "enforcing", "2": "shadow" }, after: { "1": "shadow", "2": "enforcing" } });
    expect(details.switch.checkpointId).toBeGreaterThan(0);
    expect(Number(details.switch.sources.payments.next["0"])).toBeGreaterThan(2_000);
  });

  it("rolls back to version 1 with an approved request for its graph; refuses it without one, and refuses analysts", async () => {
    const [v1, v2] = b.versionIds as [string, string];
    const analyst = await call("mutation", "promotion.rollback", { pipelineId: b.pipelineId, reason: "going back" }, "ada");
    expect(analyst.error?.code).toBe("FORBIDDEN");
    // v1's approval was used up by its enforcing deploy: the same rule as any promotion applies.
    const unapproved = await call("mutation", "promotion.rollback", { pipelineId: b.pipelineId, reason: "going back" }, "pat");
    expect(unapproved.error?.code).toBe("PRECONDITION_FAILED");
    expect(unapproved.error?.message).toMatch(/the approval \S+ of version 1 was used by deployment \S+ .*: an approval allows one enforcing deploy/);
    // Going back to a version that enforced before needs no time in shadow, so no reason is asked.
    const asked = await ok<{ id: string }>("mutation", "promotion.request", { versionId: v1, reason: "" }, "ada");
    await ok("mutation", "promotion.approve", { requestId: asked.id, comment: "back to v1" }, "sam");
    const before = await db.prisma.deployment.findMany({ where: { pipelineId: b.pipelineId, mode: "enforcing", status: "running", versionId: v2 }, select: { id: true } });
    expect(before).toHaveLength(1);
    const rolled = await ok<{ deployment: Deployment; stopped: { deploymentId: string }[]; promotionId: string | null }>("mutation", "promotion.rollback", { pipelineId: b.pipelineId, reason: "v2 blocks too many good customers" }, "pat");
    expect(rolled.deployment).toMatchObject({ versionId: v1, mode: "enforcing", status: "running", runnerJobId: enforcingV1.runnerJobId });
    expect(rolled.promotionId).toBe(asked.id);
    expect(rolled.stopped.map((s) => s.deploymentId)).toEqual(before.map((d) => d.id));
    expect(await db.prisma.deployment.count({ where: { pipelineId: b.pipelineId, mode: "enforcing", status: "running", versionId: v2 } })).toBe(0);
    expect((await runnerJob(rolled.deployment.runnerJobId)).routing?.modes).toEqual({ "1": "enforcing", "2": "shadow" });
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "rollback", subjectId: rolled.deployment.id } });
    expect(event).toMatchObject({
      actor: "pat@bank.test",
      reason: "v2 blocks too many good customers",
      details: { emergency: false, promotionId: asked.id, to: { versionId: v1, number: 1 }, from: [{ versionId: v2, number: 2 }], switch: { before: { "1": "shadow", "2": "enforcing" }, after: { "1": "enforcing", "2": "shadow" } } },
    });
  });

  it("rolls back in an emergency without a request, only with a written reason, and records it; the enforcement topic holds each alert once", async () => {
    const [v1, v2] = b.versionIds as [string, string];
    // Now v1 enforces again; the previous enforcing version is v2 (its approval is still there, but the emergency path does not look).
    const short = await call("mutation", "promotion.rollback", { pipelineId: b.pipelineId, emergency: true, reason: "now" }, "sam");
    expect(short.error?.message).toMatch(/emergency rollback needs a written reason/);
    const rolled = await ok<{ deployment: Deployment; promotionId: string | null }>("mutation", "promotion.rollback", { pipelineId: b.pipelineId, emergency: true, reason: "v1 misses an attack under way; v2 catches it", current: "stopped" }, "sam");
    expect(rolled.deployment).toMatchObject({ versionId: v2, mode: "enforcing" });
    expect(rolled.promotionId).toBeNull();
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "rollback", subjectId: rolled.deployment.id } });
    expect(event).toMatchObject({ actor: "sam@bank.test", reason: "v1 misses an attack under way; v2 catches it", details: { emergency: true, promotionId: null, to: { versionId: v2, number: 2 }, switch: { after: { "1": "stopped", "2": "enforcing" } } } });
    const from = (event.details as { from: { versionId: string }[] }).from;
    expect(from.length).toBeGreaterThanOrEqual(1);
    expect(from.every((d) => d.versionId === v1)).toBe(true);
    expect(await db.prisma.deployment.count({ where: { pipelineId: b.pipelineId, status: "running", versionId: v1 } })).toBe(0);
    expect((await runnerJob(rolled.deployment.runnerJobId)).routing?.modes).toEqual({ "1": "stopped", "2": "enforcing" });
    // Three switches and no input since: the enforcement topic still holds rule B's 20 alerts once each.
    expect((await readCommitted(ENFORCEMENT)).map(txIdOf).sort(), traceOf(ENFORCEMENT)).toEqual([...fraudBursts].sort());
    expect(await readCommitted(`${B}.shadow`)).toHaveLength(50);
  });

  it("an approver's test deployment of an unapproved version writes its alerts to <rule>.shadow on the broker, never to the enforcement topic", async () => {
    const T = `sh-${run}-t`;
    const input = `${T}-payments`;
    await admin.createTopics({ topics: [{ topic: input, numPartitions: 1 }], waitForLeaders: true });
    const created = await ok<{ id: string }>("mutation", "pipeline.create", { name: T, graph: rule(T, 4, input) }, "ada");
    const v1 = (await ok<{ version: { id: string } }>("mutation", "pipeline.saveVersion", { pipelineId: created.id, graph: rule(T, 4, input), message: "threshold 4" }, "ada")).version.id;
    const enforcementBefore = (await readCommitted(ENFORCEMENT)).length;
    const test = await ok<Deployment>("mutation", "deployment.deploy", { versionId: v1, mode: "test", reason: "an unreviewed version, tried out" }, "pat");
    await produce(input);
    await caughtUp(test, input);
    expect((await readCommitted(`${T}.shadow`)).map(txIdOf).sort(), traceOf(`${T}.shadow`)).toEqual(fraudBursts);
    expect(await readCommitted(ENFORCEMENT)).toHaveLength(enforcementBefore);
    await ok("mutation", "deployment.stop", { deploymentId: test.id, reason: "seen it" }, "pat");
  });

  it("tells the approver when the broker has deleted a topic's earliest alerts, rather than counting only what is left as the whole", async () => {
    // As a retention check does to alerts stamped with old event times: the log of each partition of
    // the shadow topic now starts one offset later.
    const starts = await admin.fetchTopicOffsets(`${B}.shadow`);
    const cut = starts.filter((o) => Number(o.high) > Number(o.low));
    await admin.deleteTopicRecords({ topic: `${B}.shadow`, partitions: cut.map((o) => ({ partition: o.partition, offset: String(Number(o.low) + 1) })) });
    const result = await ok<Comparison>("query", "comparison.compare", { pipelineId: b.pipelineId }, "ada");
    expect(result.deletedTopics).toEqual([{ topic: `${B}.shadow`, logStart: Object.fromEntries(cut.map((o) => [String(o.partition), String(Number(o.low) + 1)])) }]);
    expect(result.stats.counts.newTotal).toBe(50 - cut.length);
  });
});
