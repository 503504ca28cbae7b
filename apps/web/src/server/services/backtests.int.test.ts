// Backtests on the REAL broker (KAFKA_BROKERS) and PostgreSQL (DATABASE_URL), with a real runner
// service (`keyflow serve`) that records its jobs in the same database: a version replayed over a
// topic between two offsets, and between two instants, finishes by itself, is recorded finished with
// its counts, and its alerts (in `<rule>.backtest.<id>`) are exactly those of `keyflow run` over the
// same records from a file; a JSON-lines file uploaded to the runner (POST /files) replays the same
// way and gives the same alerts, and bad files are refused naming the line or the limit. Then the comparisons a backtest feeds: against another backtest over
// the same range, with precision and recall from a chargeback topic joined by transaction id, and
// against another rule engine's alerts read from a topic (restricted to the range's records).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, pipelineDocumentSchema } from "@keyflow/operators";
import type { SessionUser } from "../auth/roles";
import { toJsonColumn } from "../json";
import { getBacktest, startBacktest, type BacktestRange, type BacktestView } from "./backtests";
import { compareVersions } from "./comparison";
import { dropTestSchema, KEYFLOW_BIN as KEYFLOW, startRunnerProcess, type RunnerProcess } from "./runner-process.testing";
import { kafkaClient, readTopicToEnd } from "./comparison-kafka";
import { BacktestFileError, readBacktestFile, uploadBacktestFile } from "./backtests-files";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("backtests.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");
const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
if (BROKERS.length === 0) throw new Error("backtests.int.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
const run = randomBytes(4).toString("hex");
const PAYMENTS = `bt-${run}-payments`;
const CHARGEBACKS = `bt-${run}-chargebacks`;
const LEGACY = `bt-${run}-legacy-alerts`;
const RULE = `bt-${run}-velocity`;
/** Recent event times (the broker deletes by message timestamp after 24 h); messages carry them. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 2 * 3_600_000;
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-backtest-"));
const ada: SessionUser = { id: "u-ada", email: "ada@bank.test", name: "ada", role: "analyst" };

interface Payment {
  txId: string;
  cardId: string;
  amount: number;
  ts: number;
}

// 2 000 ordinary payments on 500 cards (a card every 500 s: at most 2 in 10 minutes), 20 fraud
// bursts of 4 payments and 10 legitimate bursts of 3, 10 s apart; every time distinct (bursts fall on
// half seconds), sorted by time, so offset i is the i-th record and a time range maps to an offset range.
function payments(): Payment[] {
  const records: Payment[] = [];
  for (let i = 0; i < 2_000; i++) records.push({ txId: `t${i}`, cardId: `c${i % 500}`, amount: (i * 31) % 500, ts: T0 + i * 1_000 });
  for (let k = 0; k < 30; k++) {
    const fraud = k < 20;
    for (let j = 0; j < (fraud ? 4 : 3); j++) records.push({ txId: `${fraud ? "f" : "b"}${k}-${j}`, cardId: `${fraud ? "f" : "b"}${k}`, amount: 900, ts: T0 + k * 60_000 + 500 + j * 10_000 });
  }
  return records.sort((a, b) => a.ts - b.ts);
}
const RECORDS = payments();
/** The backtests' range: offsets [FROM, TO) of the single partition. */
const FROM = 300;
const TO = 1_700;
const inRange = RECORDS.slice(FROM, TO);
const rangeIds = new Set(inRange.map((r) => r.txId));
/** Chargebacks: the fraud bursts' payments, and one payment of a legitimate burst (disputed all the same). */
const CHARGED = [...RECORDS.filter((r) => r.txId.startsWith("f")).map((r) => r.txId), "b25-2"];

function rule(threshold: number, source: Record<string, unknown>, sink: Record<string, unknown>) {
  return pipelineDocumentSchema.parse({
    format: PIPELINE_FORMAT,
    name: RULE,
    settings: { checkpointIntervalMs: 500, parallelism: 1 },
    nodes: [
      { id: "payments", ...source },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" } },
      { id: "alerts", ...sink },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  });
}
const live = (threshold: number) => rule(threshold, { type: "source.kafka", params: { topic: PAYMENTS, startFrom: "latest", timestampField: "ts", maxOutOfOrdernessMs: 1_000 } }, { type: "sink.kafka", params: { topic: `${RULE}.enforcement`, deliveryGuarantee: "exactly-once" } });

/** The oracle: `keyflow run` over the range's records from a file; the txIds of the records its alerts cite. */
async function keyflowRun(threshold: number): Promise<string[]> {
  const folder = mkdtempSync(path.join(dir, `oracle-${threshold}-`));
  writeFileSync(path.join(folder, "input.jsonl"), inRange.map((r) => JSON.stringify(r)).join("\n") + "\n");
  const doc = rule(threshold, { type: "source.file", params: { path: "input.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 1_000 } }, { type: "sink.file", params: { path: "alerts.jsonl" } });
  writeFileSync(path.join(folder, "pipeline.json"), JSON.stringify(doc));
  const result = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [KEYFLOW, "run", path.join(folder, "pipeline.json")], { cwd: folder, env: { ...process.env, KEYFLOW_LOG_LEVEL: "warn", DATABASE_URL: "", KAFKA_BROKERS: "" }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
  expect(result.code, result.stderr).toBe(0);
  return readFileSync(path.join(folder, "alerts.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => String(((JSON.parse(line) as { event: { txId: string } }).event).txId));
}

const kafka = new Kafka({ clientId: `keyflow-backtest-it-${run}`, brokers: BROKERS, logLevel: logLevel.NOTHING });
let admin: Admin;
let db: Db;
let runner: RunnerProcess | undefined;
let runnerUrl = "";
const runnerLog = () => runner?.log() ?? "";
let pipelineId = "";
const versionIds: Record<number, string> = {};

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 120_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n${runnerLog()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Polls the backtest until its bounded job has finished (it must end by itself), failing on a failed job. */
async function finished(backtest: BacktestView): Promise<BacktestView> {
  return eventually(async () => {
    const b = await getBacktest(db.prisma, runnerUrl, backtest.id);
    if (b.status === "failed") throw new Error(`backtest ${b.id} failed: ${b.failure}\n${runnerLog()}`);
    return b.status === "finished" ? b : undefined;
  }, `backtest ${backtest.id} to finish`);
}

const sorted = (xs: Iterable<string>) => [...xs].sort();
const intersect = (a: Set<string>, b: Set<string>) => new Set([...a].filter((x) => b.has(x)));

beforeAll(async () => {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  url.searchParams.set("schema", `kf_backtest_${process.pid}_${Date.now().toString(36)}`);
  db = createDb({ databaseUrl: url.toString() });
  await migrate(db);
  // The runner records its jobs in the same database: a bounded job's end is its own report.
  runner = await startRunnerProcess(dir, { DATABASE_URL: url.toString(), KAFKA_BROKERS: BROKERS.join(",") });
  runnerUrl = runner.url;

  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [PAYMENTS, CHARGEBACKS, LEGACY].map((topic) => ({ topic, numPartitions: 1 })), waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: PAYMENTS, acks: -1, messages: RECORDS.map((r) => ({ partition: 0, timestamp: String(r.ts), value: JSON.stringify(r) })) });
  await producer.send({ topic: CHARGEBACKS, acks: -1, messages: CHARGED.map((txId) => ({ value: JSON.stringify({ txId, reason: "10.4", amount: 900 }) })) });
  // The legacy engine flagged the 4th payment of the even fraud bursts, and two ordinary payments.
  const legacy = [...Array.from({ length: 10 }, (_, k) => `f${2 * k}-3`), "t700", "t1900"];
  await producer.send({ topic: LEGACY, acks: -1, messages: legacy.map((transactionId) => ({ value: JSON.stringify({ transactionId, score: 0.93, engine: "legacy" }) })) });
  await producer.disconnect();

  const pipeline = await db.prisma.pipeline.create({ data: { name: RULE, draft: toJsonColumn(live(4)) } });
  pipelineId = pipeline.id;
  for (const [number, threshold] of [[1, 4], [2, 3]] as const) {
    const v = await db.prisma.pipelineVersion.create({ data: { pipelineId, number, graph: toJsonColumn(live(threshold)), graphHash: `h${number}`, author: ada.email } });
    versionIds[number] = v.id;
  }
}, 180_000);

afterAll(async () => {
  await runner?.stop();
  rmSync(dir, { recursive: true, force: true });
  await admin?.disconnect();
  await dropTestSchema(db);
});

describe("backtests on the real broker", () => {
  const byOffsets: BacktestRange = { kind: "kafka", from: { by: "offsets", offsets: { "0": FROM } }, to: { by: "offsets", offsets: { "0": TO } } };
  let v2: BacktestView;
  let v1: BacktestView;
  let oracle2: string[];

  it("replays a version over a topic between two offsets: it finishes by itself, recorded with its counts, and its alerts are keyflow run's on the same records", async () => {
    v2 = await startBacktest(db.prisma, runnerUrl, ada, { versionId: versionIds[2] ?? "", range: byOffsets });
    expect(v2.alertTopics).toEqual([`${RULE}.backtest.${v2.id}`]);
    const done = await finished(v2);
    oracle2 = await keyflowRun(3);
    expect(oracle2.length).toBeGreaterThan(0);
    expect(done.counts).toEqual({ records: TO - FROM, remaining: 0, alerts: oracle2.length, deadLetters: 0 });
    expect(done.finishedAt).not.toBeNull();
    // Audited in the transaction that recorded it.
    const audit = await db.prisma.auditEvent.findFirst({ where: { action: "backtest", subjectId: v2.id } });
    expect(audit?.details).toMatchObject({ pipelineId, versionId: versionIds[2], number: 2, range: byOffsets });

    // Its topic holds exactly keyflow run's alerts; the comparison of the backtest with itself reads them.
    const self = await compareVersions(db.prisma, BROKERS, { pipelineId, newSide: { kind: "backtest", backtestId: v2.id }, oldSide: { kind: "backtest", backtestId: v2.id }, labelField: null, samples: 0 });
    expect(self.stats.counts).toMatchObject({ both: new Set(oracle2).size, onlyNew: 0, onlyOld: 0 });
    expect(self.stats.outOfScope).toEqual({ new: 0, old: 0 });
  });

  it("between two instants: the broker resolves them to the same offsets, and the alerts are the same", async () => {
    const first = inRange[0]?.ts ?? 0;
    const afterLast = RECORDS[TO]?.ts ?? 0;
    const byTime = await startBacktest(db.prisma, runnerUrl, ada, { versionId: versionIds[2] ?? "", range: { kind: "kafka", from: { by: "time", ts: first }, to: { by: "time", ts: afterLast } } });
    const done = await finished(byTime);
    expect(done.counts).toEqual({ records: TO - FROM, remaining: 0, alerts: oracle2.length, deadLetters: 0 });
    const read = await readTopicToEnd(kafkaClient(BROKERS), done.alertTopics[0] ?? "", 10_000);
    expect(sorted(read.messages.map((m) => String((JSON.parse(m.value ?? "{}") as { event: { txId: string } }).event.txId)))).toEqual(sorted(oracle2));
    // Two backtests over differently described ranges are not compared side by side.
    await expect(compareVersions(db.prisma, BROKERS, { pipelineId, newSide: { kind: "backtest", backtestId: byTime.id }, oldSide: { kind: "backtest", backtestId: v2.id }, labelField: null, samples: 0 })).rejects.toThrow(/replayed different ranges: compare backtests over the same range/);
  });

  it("against another backtest over the same range, with precision and recall from a chargeback topic joined by transaction id", async () => {
    v1 = await startBacktest(db.prisma, runnerUrl, ada, { versionId: versionIds[1] ?? "", range: byOffsets });
    await finished(v1);
    const oracle1 = new Set(await keyflowRun(4));
    const fresh = new Set(oracle2);
    const cmp = await compareVersions(db.prisma, BROKERS, {
      pipelineId,
      newSide: { kind: "backtest", backtestId: v2.id },
      oldSide: { kind: "backtest", backtestId: v1.id },
      labelField: null,
      labels: { kind: "chargebacks", topic: CHARGEBACKS, idField: "txId" },
      samples: 2,
    });
    expect(cmp.new.label).toBe(`v2 backtest ${v2.id.slice(-6)}`);
    expect(cmp.stats.counts).toEqual({
      both: intersect(fresh, oracle1).size,
      onlyNew: [...fresh].filter((id) => !oracle1.has(id)).length,
      onlyOld: [...oracle1].filter((id) => !fresh.has(id)).length,
      newTotal: fresh.size,
      oldTotal: oracle1.size,
    });
    expect(cmp.stats.counts.onlyNew).toBeGreaterThan(0);
    // The oracle of the scores: a charged-back transaction is fraud, any other is not; recall over the range's chargebacks.
    const charged = new Set(CHARGED);
    const chargedInRange = intersect(charged, rangeIds);
    const scores = (alerted: Set<string>) => ({
      labelled: alerted.size,
      truePositives: intersect(alerted, charged).size,
      precision: intersect(alerted, charged).size / alerted.size,
      recall: intersect(alerted, chargedInRange).size / chargedInRange.size,
    });
    expect(cmp.stats.scores).toEqual({ labelField: `chargebacks:${CHARGEBACKS}`, source: "chargebacks", fraudInInput: chargedInRange.size, new: scores(fresh), old: scores(oracle1) });
    expect(cmp.inputTopics).toEqual([PAYMENTS]);
  });

  it("against another rule engine's alerts read from a topic, matched by its own id field and restricted to the range's records", async () => {
    const cmp = await compareVersions(db.prisma, BROKERS, { pipelineId, newSide: { kind: "backtest", backtestId: v2.id }, oldSide: { kind: "topic", topic: LEGACY, idField: "transactionId" }, labelField: null, samples: 1 });
    const fresh = new Set(oracle2);
    const legacy = new Set([...Array.from({ length: 10 }, (_, k) => `f${2 * k}-3`), "t700", "t1900"]);
    const legacyInRange = intersect(legacy, rangeIds);
    expect(cmp.old.label).toBe(`topic ${LEGACY}`);
    expect(cmp.stats.counts).toEqual({
      both: intersect(fresh, legacyInRange).size,
      onlyNew: [...fresh].filter((id) => !legacyInRange.has(id)).length,
      onlyOld: [...legacyInRange].filter((id) => !fresh.has(id)).length,
      newTotal: fresh.size,
      oldTotal: legacyInRange.size,
    });
    // The legacy alerts on records outside the backtest's range are left out, and counted.
    expect(cmp.stats.outOfScope).toEqual({ new: 0, old: legacy.size - legacyInRange.size });
    expect(cmp.stats.counts.onlyOld).toBeGreaterThan(0); // t700: the legacy engine's own false positive
    expect(cmp.stats.samples.onlyOld[0]?.value).toMatchObject({ engine: "legacy" });
  });

  const streamOf = (text: string) => new Blob([text]).stream();
  const upload = (text: string, name: string, maxBytes = 1_000_000) => uploadBacktestFile(db.prisma, runnerUrl, ada, { body: streamOf(text), name, declaredBytes: null, maxBytes });

  it("over a file uploaded to the runner: stored under a name of its own, audited, and the backtest finishes by itself with keyflow run's alerts", async () => {
    const text = inRange.map((r) => JSON.stringify(r)).join("\n") + "\n";
    const stored = await upload(text, "range.jsonl");
    expect(stored).toMatchObject({ name: "range.jsonl", bytes: Buffer.byteLength(text), records: TO - FROM });
    expect(readFileSync(path.join(dir, "data", stored.path), "utf8")).toBe(text);
    const audit = await db.prisma.auditEvent.findFirst({ where: { action: "upload", subjectId: stored.path } });
    expect(audit).toMatchObject({ actor: ada.email, subjectType: "backtest_file", details: { name: "range.jsonl", records: TO - FROM, sha256: stored.sha256 } });

    const fromFile = await startBacktest(db.prisma, runnerUrl, ada, { versionId: versionIds[2] ?? "", range: { kind: "file", path: stored.path } });
    const done = await finished(fromFile);
    expect(done.counts).toEqual({ records: TO - FROM, remaining: 0, alerts: oracle2.length, deadLetters: 0 });
    const read = await readTopicToEnd(kafkaClient(BROKERS), done.alertTopics[0] ?? "", 10_000);
    expect(sorted(read.messages.map((m) => String((JSON.parse(m.value ?? "{}") as { event: { txId: string } }).event.txId)))).toEqual(sorted(oracle2));

    // Its comparison reads the file back from the runner: recall counts the chargebacks among the
    // file's records, not among the whole live topic's (which holds fraud the backtest never saw).
    const chargebacks = { kind: "chargebacks", topic: CHARGEBACKS, idField: "txId" } as const;
    const side = { kind: "backtest", backtestId: fromFile.id } as const;
    const cmp = await compareVersions(db.prisma, BROKERS, { pipelineId, newSide: side, oldSide: side, labelField: null, labels: chargebacks, samples: 0 }, (file) => readBacktestFile(runnerUrl, file));
    const chargedInFile = intersect(new Set(CHARGED), rangeIds);
    expect(chargedInFile.size).toBeLessThan(CHARGED.length);
    expect(cmp).toMatchObject({ inputFile: stored.path, inputUnavailable: null, scopedToRange: true, inputTopics: [] });
    expect(cmp.stats.scores?.fraudInInput).toBe(chargedInFile.size);
    // Each alert's explanation shows the parameters of the version that raised it (v2: threshold 3).
    expect(cmp.new.parameters.map((p) => p.nodeId)).toEqual(["byCard", "velocity"]);
    expect(cmp.new.parameters[1]?.params).toMatchObject({ threshold: 3, idField: "txId" });
    expect(cmp.stats.scores?.new.recall).toBe(intersect(new Set(oracle2), chargedInFile).size / chargedInFile.size);
    // Without a runner to read it back from, it says so and leaves recall out rather than guess it.
    const blind = await compareVersions(db.prisma, BROKERS, { pipelineId, newSide: side, oldSide: side, labelField: null, labels: chargebacks, samples: 0 });
    expect(blind.inputUnavailable).toMatch(/no runner to read the backtest's file back from: recall is not computed/);
    expect(blind.stats.scores?.new.recall).toBeNull();
  });

  it("refuses a file with a line that is not JSON (named), an empty file and one over the limit, and audits none of them", async () => {
    const before = await db.prisma.auditEvent.count({ where: { action: "upload" } });
    const bad = upload(`${JSON.stringify(inRange[0])}\n${JSON.stringify(inRange[1])}\nnot json\n`, "bad.jsonl");
    await expect(bad).rejects.toThrow(BacktestFileError);
    await expect(bad).rejects.toThrow(/^bad\.jsonl: line 3 is not JSON/);
    await expect(upload("", "empty.jsonl")).rejects.toThrow(/^empty\.jsonl: the file is empty/);
    const big = upload(inRange.map((r) => JSON.stringify(r)).join("\n"), "big.jsonl", 1_000);
    await expect(big).rejects.toMatchObject({ status: 413, message: "the file is larger than the upload limit of 1000 bytes (KEYFLOW_UPLOAD_MAX_BYTES)" });
    expect(await db.prisma.auditEvent.count({ where: { action: "upload" } })).toBe(before);
  });
});
