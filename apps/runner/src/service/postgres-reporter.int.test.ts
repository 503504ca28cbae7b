// Against a REAL PostgreSQL (DATABASE_URL, from `bash scripts/services/start.sh postgres`): the
// runner service records its jobs on their deployments (running, stopped, failed with the reason)
// and one `checkpoints` row per completed checkpoint. Works in a throw-away schema.
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createDb, migrate, parseDatabaseUrl, type Db } from "@keyflow/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { eventually } from "../../test/run-cli";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";

const env = readEnv();
if (!env.databaseUrl) {
  throw new Error("DATABASE_URL is not set: this integration test needs a real PostgreSQL. Start one with `bash scripts/services/start.sh postgres` and export the DATABASE_URL line it prints.");
}
const url = new URL(parseDatabaseUrl(env.databaseUrl).connectionString);
url.searchParams.set("schema", `kf_runner_${process.pid}_${Date.now().toString(36)}`);
const databaseUrl = url.toString();

let db: Db;
let service: RunnerService;
const dataDir = mkdtempSync(path.join(tmpdir(), "keyflow-pg-data-"));

const pipeline = (name: string, source: Record<string, unknown>) => ({
  format: "keyflow.pipeline/v1",
  name,
  nodes: [
    { id: "payments", ...source },
    { id: "big", type: "filter", params: { expression: "amount > 100" } },
    { id: "alerts", type: "sink.file", params: { path: `${name}/alerts.jsonl` } },
  ],
  edges: [
    { from: "payments", to: "big" },
    { from: "big", to: "alerts" },
  ],
});

async function deployment(name: string, graph: unknown): Promise<string> {
  const p = await db.prisma.pipeline.create({ data: { name, draft: graph as object } });
  const v = await db.prisma.pipelineVersion.create({ data: { pipelineId: p.id, number: 1, graph: graph as object, graphHash: "test", author: "runner-test" } });
  const d = await db.prisma.deployment.create({ data: { pipelineId: p.id, versionId: v.id } });
  return d.id;
}

async function api<T>(method: string, route: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${service.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${service.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

beforeAll(async () => {
  db = createDb({ databaseUrl });
  await migrate(db);
  service = await createRunnerService(
    {
      ...env,
      databaseUrl,
      kafkaBrokers: undefined,
      runnerPort: 0,
      runnerHost: "127.0.0.1",
      checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-pg-ckpt-")),
      dataDir,
    },
    silentLogger,
    { checkpointIntervalMs: 200 },
  );
});

afterAll(async () => {
  await service?.close();
  if (db?.driver.kind === "postgres" && db.driver.schema) await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${db.driver.schema}" CASCADE`);
  await db?.close();
});

describe("the runner records deployments in Postgres", () => {
  it("running, checkpoints, then stopped", async () => {
    const graph = pipeline("pg-demo", { type: "source.demo", params: { eventsPerSecond: 200 } });
    const id = await deployment("pg-demo", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);

    await eventually(async () => (await db.prisma.deployment.findUniqueOrThrow({ where: { id } })).status === "running", "the deployment to be running");
    const rows = await eventually(async () => {
      const r = await db.prisma.checkpoint.findMany({ where: { deploymentId: id }, orderBy: { checkpointId: "asc" } });
      return r.length >= 2 ? r : undefined;
    }, "two checkpoint rows");
    expect(rows[0]).toMatchObject({ checkpointId: 1, status: "completed" });
    expect(rows[0]?.path).toMatch(/chk-0000000001$/);
    expect(Number(rows[0]?.sizeBytes)).toBeGreaterThan(0);
    // Per-task acknowledgements and the alignment time (a single-threaded job: one task, no alignment).
    expect(rows[0]?.alignmentMs).toBe(0);
    expect(rows[0]?.acks).toEqual({ tasks: [{ task: "source", subtask: 0, bytes: Number(rows[0]?.sizeBytes), alignmentMs: 0 }] });

    const history = await api<{ checkpoints: { id: number }[] }>("GET", `/jobs/${id}/checkpoints`);
    expect(history.json.checkpoints[history.json.checkpoints.length - 1]?.id).toBe(1);

    expect((await api<JobView>("DELETE", `/jobs/${id}`)).json.status).toBe("stopped");
    const stopped = await eventually(async () => {
      const d = await db.prisma.deployment.findUniqueOrThrow({ where: { id } });
      return d.status === "stopped" ? d : undefined;
    }, "the deployment to be stopped");
    expect(stopped.stoppedAt).not.toBeNull();
    const last = (await api<JobView>("GET", `/jobs/${id}`)).json.lastCheckpoint?.id;
    await eventually(async () => (await db.prisma.checkpoint.count({ where: { deploymentId: id, checkpointId: last } })) === 1, "the final checkpoint's row");
  });

  it("a bounded job that reads its input to the end is marked finished (not stopped), with its final counts", async () => {
    // 10 payments, 4 above 100, and one line that is not JSON (a dead letter).
    const lines = [...Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `p${i}`, amount: i < 4 ? 500 : 50, ts: 1_000 + i })), "not json"];
    writeFileSync(path.join(dataDir, "pg-bounded.jsonl"), lines.join("\n") + "\n");
    const graph = pipeline("pg-bounded", { type: "source.file", params: { path: "pg-bounded.jsonl", timestampField: "ts" } });
    const id = await deployment("pg-bounded", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);
    const done = await eventually(async () => {
      const d = await db.prisma.deployment.findUniqueOrThrow({ where: { id } });
      return d.status === "finished" ? d : undefined;
    }, "the deployment to be finished");
    expect(done.stoppedAt).not.toBeNull();
    expect(done.finalMetrics).toMatchObject({
      restarts: 0,
      nodes: {
        payments: { type: "source.file", recordsOut: 10, deadLetters: 1 },
        big: { type: "filter", recordsIn: 10, recordsOut: 4 },
        alerts: { type: "sink.file", recordsIn: 4 },
      },
    });
  });

  it("an aborted checkpoint (a throttled sink past checkpointTimeoutMs) is a failed row with its reason, and in the job's checkpoint history", async () => {
    const graph = {
      format: "keyflow.pipeline/v1",
      name: "pg-aborted",
      settings: { parallelism: 2, checkpointTimeoutMs: 300 },
      nodes: [
        { id: "payments", type: "source.demo", params: { eventsPerSecond: 500 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" } },
        { id: "alerts", type: "sink.file", params: { path: "pg-aborted/alerts.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "alerts" },
      ],
    };
    const id = await deployment("pg-aborted", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);
    await eventually(async () => (await db.prisma.checkpoint.count({ where: { deploymentId: id, status: "completed" } })) > 0, "a completed checkpoint before the throttle");
    // One record a second: the sink task cannot reach the next barrier within 300 ms.
    expect((await api("POST", `/jobs/${id}/nodes/alerts/throttle`, { recordsPerSecond: 1 })).status).toBe(200);
    const failed = await eventually(async () => (await db.prisma.checkpoint.findFirst({ where: { deploymentId: id, status: "failed" } })) ?? undefined, "a failed checkpoint row");
    expect(failed.failureReason).toMatch(/not acknowledged by every task within checkpointTimeoutMs \(300 ms\)/);
    expect(failed.durationMs).toBeGreaterThanOrEqual(300);
    const history = await api<{ checkpoints: { id: number }[]; failed: { id: number; status: string; reason: string }[] }>("GET", `/jobs/${id}/checkpoints`);
    expect(history.json.failed.map((f) => f.id)).toContain(failed.checkpointId);
    expect(history.json.failed[0]).toMatchObject({ status: "failed", reason: failed.failureReason });
    expect(history.json.checkpoints.map((c) => c.id)).not.toContain(failed.checkpointId);
    // Lifted before the stop: a stop lets the sink drain what is in flight, which at one record a second
    // took 33 s on a quiet machine and over three minutes beside a CI run (the test's subject is the row).
    expect((await api("POST", `/jobs/${id}/nodes/alerts/throttle`, { recordsPerSecond: null })).status).toBe(200);
    await api("DELETE", `/jobs/${id}`);
  });

  it("a checkpoint that cannot be written (its folder replaced by a file) is a failed row with the file system's error", async () => {
    const graph = pipeline("pg-unwritable", { type: "source.demo", params: { eventsPerSecond: 200 } });
    const id = await deployment("pg-unwritable", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);
    await eventually(async () => (await db.prisma.checkpoint.count({ where: { deploymentId: id, status: "completed" } })) > 0, "a completed checkpoint first");
    const folder = (await api<JobView>("GET", `/jobs/${id}`)).json.checkpointDir;
    // Moved away in one step: a recursive delete raced the job writing its next checkpoint (ENOTEMPTY).
    renameSync(folder, `${folder}.moved`);
    writeFileSync(folder, "not a folder\n");
    try {
      const failed = await eventually(async () => (await db.prisma.checkpoint.findFirst({ where: { deploymentId: id, status: "failed" } })) ?? undefined, "a failed checkpoint row");
      expect(failed.failureReason).toMatch(/ENOTDIR/);
      expect(failed.failureReason).toContain(folder);
    } finally {
      await api("DELETE", `/jobs/${id}`);
      rmSync(folder, { force: true });
      rmSync(`${folder}.moved`, { recursive: true, force: true });
    }
  });

  it("a parallel job's checkpoint rows carry every task's acknowledgement and the alignment time", async () => {
    const graph = {
      format: "keyflow.pipeline/v1",
      name: "pg-parallel",
      settings: { parallelism: 2 },
      nodes: [
        { id: "payments", type: "source.demo", params: { eventsPerSecond: 200 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" } },
        { id: "velocity", type: "velocity", params: { threshold: 5, windowMs: "2m", idField: "txId" } },
        { id: "alerts", type: "sink.file", params: { path: "pg-parallel/alerts.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "velocity" },
        { from: "velocity", to: "alerts" },
      ],
    };
    const id = await deployment("pg-parallel", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);
    const row = await eventually(async () => (await db.prisma.checkpoint.findFirst({ where: { deploymentId: id }, orderBy: { checkpointId: "asc" } })) ?? undefined, "a checkpoint row");
    const acks = (row.acks as { tasks: Array<{ task: string; subtask: number; alignmentMs: number; keyGroups?: number[] }> }).tasks;
    expect(acks.map((a) => `${a.task}-${a.subtask}`)).toEqual(["source-0", "keyed-0", "keyed-1", "sink-0"]);
    expect(acks.filter((a) => a.task === "keyed").map((a) => a.keyGroups)).toEqual([
      [0, 63],
      [64, 127],
    ]);
    expect(row.alignmentMs).toBe(Math.round(Math.max(...acks.map((a) => a.alignmentMs))));
    await api("DELETE", `/jobs/${id}`);
  });

  it("a failing job marks its deployment failed with the reason", async () => {
    const graph = pipeline("pg-broken", { type: "source.file", params: { path: "missing.jsonl", timestampField: "ts" } });
    const id = await deployment("pg-broken", graph);
    expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: graph })).status).toBe(201);
    const failed = await eventually(async () => {
      const d = await db.prisma.deployment.findUniqueOrThrow({ where: { id } });
      return d.status === "failed" ? d : undefined;
    }, "the deployment to be failed");
    expect(failed.failureReason).toMatch(/node "payments": cannot read "missing\.jsonl"/);
    await api("DELETE", `/jobs/${id}`);
  });
  it("a rule job's end is recorded on its live branches' rows (a closed one stays as it was), and its checkpoints on none", async () => {
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: `p${i}`, amount: i < 4 ? 500 : 50, ts: 1_000 + i }));
    writeFileSync(path.join(dataDir, "pg-rule.jsonl"), lines.join("\n") + "\n");
    const graph = pipeline("pg-rule", { type: "source.file", params: { path: "pg-rule.jsonl", timestampField: "ts" } });
    const p = await db.prisma.pipeline.create({ data: { name: "pg-rule", draft: graph } });
    const [v1, v2] = await Promise.all([1, 2].map((number) => db.prisma.pipelineVersion.create({ data: { pipelineId: p.id, number, graph, graphHash: `test-${number}`, author: "runner-test" } })));
    const jobId = "rule-pg-test";
    const rows = await Promise.all([
      db.prisma.deployment.create({ data: { pipelineId: p.id, versionId: v1!.id, mode: "enforcing", status: "running", runnerJobId: jobId } }),
      db.prisma.deployment.create({ data: { pipelineId: p.id, versionId: v2!.id, mode: "shadow", status: "running", runnerJobId: jobId } }),
      db.prisma.deployment.create({ data: { pipelineId: p.id, versionId: v2!.id, mode: "enforcing", status: "stopped", runnerJobId: jobId } }),
    ]);
    const started = await api<JobView>("POST", "/rule-jobs", { jobId, rule: { name: "pg-rule", branches: [{ version: 1, mode: "enforcing", pipeline: graph }, { version: 2, mode: "shadow", pipeline: graph }] } });
    expect(started.status, JSON.stringify(started.json)).toBe(201);
    await eventually(async () => ((await db.prisma.deployment.count({ where: { runnerJobId: jobId, status: "finished" } })) === 2 ? true : undefined), "the branches' rows to be finished");
    expect((await db.prisma.deployment.findUniqueOrThrow({ where: { id: rows[2].id } })).status).toBe("stopped");
    expect(await db.prisma.checkpoint.count({ where: { deploymentId: { in: rows.map((r) => r.id) } } })).toBe(0);
    // The enforcing branch writes the sink's own file; the shadow branch a file of its own; each alert names its version.
    const read = (file: string) => readFileSync(path.join(dataDir, file), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { id: string; ruleVersion: number });
    expect(read("pg-rule/alerts.jsonl").map((a) => [a.id, a.ruleVersion])).toEqual([["p0", 1], ["p1", 1], ["p2", 1], ["p3", 1]]);
    expect(read("pg-rule/pg-rule.shadow.v2.alerts.jsonl").map((a) => [a.id, a.ruleVersion])).toEqual([["p0", 2], ["p1", 2], ["p2", 2], ["p3", 2]]);
  });
});
