// Issue 35 point 2, the attacks on the runner: files stay in the data folder, restores and savepoints
// in the checkpoint root, through the real HTTP API and, with the validator bypassed, in the job
// manager and the connectors themselves (defence in depth), symlinks included.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { readEnv, type RunnerEnv } from "../env";
import { silentLogger } from "../log";
import { eventually } from "../../test/run-cli";
import { createJobDriver } from "../job/create";
import { PathOutsideFolderError } from "../io/confine";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";
import { requestJson } from "../io/kafka/testing";

const base = mkdtempSync(path.join(tmpdir(), "keyflow-confine-"));
const dataDir = path.join(base, "data");
const checkpointRoot = path.join(base, "checkpoints");
/** Outside both folders: what an attacker would read or overwrite. */
const outside = path.join(base, "outside");
const victim = path.join(outside, "victim.txt");
let env: RunnerEnv;
let service: RunnerService;

beforeAll(async () => {
  for (const d of [dataDir, checkpointRoot, outside]) mkdirSync(d, { recursive: true });
  writeFileSync(victim, "precious\n");
  writeFileSync(path.join(outside, "secrets.jsonl"), '{"DATABASE_URL":"postgres://secret","ts":1}\n');
  env = { ...readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" }), kafkaBrokers: undefined, dataDir, checkpointRoot };
  service = await createRunnerService(env, silentLogger, { checkpointIntervalMs: 100 });
});
afterAll(() => service?.close());

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

type Node = { id: string; type: string; params: Record<string, unknown> };
function pipeline(name: string, source: Node, sinkPath: string) {
  return {
    format: "keyflow.pipeline/v1",
    name,
    nodes: [source, { id: "big", type: "filter", params: { expression: "amount > 100" } }, { id: "sink", type: "sink.file", params: { path: sinkPath } }],
    edges: [
      { from: "payments", to: "big" },
      { from: "big", to: "sink" },
    ],
  };
}
const demo: Node = { id: "payments", type: "source.demo", params: { eventsPerSecond: 200, seed: 3 } };
const file = (p: string): Node => ({ id: "payments", type: "source.file", params: { path: p, timestampField: "ts" } });
/** The document as the validator would give it, without asking the validator about paths (a bypass). */
const unchecked = (doc: unknown): PipelineDocument => validatePipeline(doc, { anyFilePaths: true }).document as PipelineDocument;
type Refusal = { error: string; issues?: string[] };
const said = (r: { json: Refusal }) => [r.json.error, ...(r.json.issues ?? [])].join("\n");

describe("files stay in the runner's folders", () => {
  it("a deploy reading /etc/passwd is refused by the validator, and by the runner when the validator is bypassed", async () => {
    const r = await api<Refusal>("POST", "/jobs", { deploymentId: "passwd", pipeline: pipeline("passwd", file("/etc/passwd"), "out/a.jsonl") });
    expect(r.status).toBe(400);
    expect(said(r)).toContain('node "payments": param "path" must be a path inside the data folder, not an absolute path');
    expect(() => service.jobs.deploy("passwd", unchecked(pipeline("passwd", file("/etc/passwd"), "out/a.jsonl")))).toThrow(PathOutsideFolderError);
    expect(() => service.jobs.deploy("passwd", unchecked(pipeline("passwd", file("/etc/passwd"), "out/a.jsonl")))).toThrow(/node "payments": param "path" "\/etc\/passwd" must be a path inside the data folder/);
    expect(service.jobs.get("passwd")).toBeUndefined();
    // The connectors check again at every start (a job restarted after its folder changed).
    const driver = createJobDriver({ doc: unchecked(pipeline("passwd", file("/etc/passwd"), "out/a.jsonl")), jobId: "passwd", baseDir: dataDir, env, log: silentLogger });
    await expect(driver.run()).rejects.toThrow(/node "payments": param "path" "\/etc\/passwd" must be a path inside the data folder/);
  });

  it("a dry run of a pipeline naming /etc/passwd is refused like a deploy", async () => {
    const r = await api<Refusal>("POST", "/dry-run", { pipeline: pipeline("dry", file("/etc/passwd"), "out/a.jsonl"), records: ['{"amount":500,"ts":1}'] });
    expect(r.status).toBe(400);
    expect(said(r)).toContain('node "payments": param "path" must be a path inside the data folder, not an absolute path');
  });

  it("a sink outside the data folder is refused and the file there is untouched", async () => {
    const rel = path.relative(dataDir, victim);
    const r = await api<Refusal>("POST", "/jobs", { deploymentId: "trunc", pipeline: pipeline("trunc", demo, rel) });
    expect(r.status).toBe(400);
    expect(said(r)).toContain(`node "sink": param "path" must be a path inside the data folder, not one that leaves it ("${rel}")`);
    for (const p of [rel, victim]) expect(() => service.jobs.deploy("trunc", unchecked(pipeline("trunc", demo, p)))).toThrow(/node "sink": param "path" .* must be a path inside the data folder; it leads out of it/);
    const driver = createJobDriver({ doc: unchecked(pipeline("trunc", demo, victim)), jobId: "trunc", baseDir: dataDir, env, log: silentLogger, demoLimit: 50 });
    await expect(driver.run()).rejects.toThrow(PathOutsideFolderError);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
  });

  it("a backtest (a bounded file job) reading /proc/self/environ is refused", async () => {
    const backtest = pipeline("rule.backtest.b1", file("/proc/self/environ"), "backtests/b1/sink.jsonl");
    const r = await api<Refusal>("POST", "/jobs", { deploymentId: "backtest-b1", pipeline: backtest });
    expect(r.status).toBe(400);
    expect(said(r)).toContain('node "payments": param "path" must be a path inside the data folder, not an absolute path');
    expect(() => service.jobs.deploy("backtest-b1", unchecked(backtest))).toThrow(/"\/proc\/self\/environ" must be a path inside the data folder/);
  });

  it("a symlink inside the data folder that points out is refused, for sources and sinks", async () => {
    symlinkSync(outside, path.join(dataDir, "escape"));
    symlinkSync(path.join(outside, "secrets.jsonl"), path.join(dataDir, "secrets.jsonl"));
    const viaDir = await api<Refusal>("POST", "/jobs", { deploymentId: "link-1", pipeline: pipeline("link-1", demo, "escape/victim.txt") });
    expect(viaDir.status).toBe(400);
    expect(viaDir.json.error).toBe('node "sink": param "path" "escape/victim.txt" must be a path inside the data folder; it leads out of it (through a symbolic link)');
    // A file not there yet is judged by its nearest existing parent.
    const notYet = await api<Refusal>("POST", "/jobs", { deploymentId: "link-2", pipeline: pipeline("link-2", demo, "escape/new/alerts.jsonl") });
    expect(notYet.status).toBe(400);
    const read = await api<Refusal>("POST", "/jobs", { deploymentId: "link-3", pipeline: pipeline("link-3", file("secrets.jsonl"), "out/x.jsonl") });
    expect(read.status).toBe(400);
    expect(read.json.error).toContain('node "payments": param "path" "secrets.jsonl" must be a path inside the data folder');
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(existsSync(path.join(outside, "new"))).toBe(false);
  });

  it("restores and savepoints stay in the checkpoint root", async () => {
    const created = await api<JobView>("POST", "/jobs", { deploymentId: "sp-src", pipeline: pipeline("sp-src", demo, "sp/alerts.jsonl") });
    expect(created.status).toBe(201);
    await eventually(async () => ((await api<JobView>("GET", "/jobs/sp-src")).json.lastCheckpoint !== null ? true : undefined), "a checkpoint");
    const outsideDir = await api<Refusal>("POST", "/jobs/sp-src/savepoint", { dir: outside });
    expect(outsideDir.status).toBe(400);
    expect(outsideDir.json.error).toContain(`dir ${JSON.stringify(outside)} must be a path inside the checkpoint folder`);
    const sp = await api<{ path: string }>("POST", "/jobs/sp-src/savepoint", {});
    expect(sp.status).toBe(200);
    expect((await api<JobView>("DELETE", "/jobs/sp-src")).json.status).toBe("stopped");

    // The same savepoint copied outside the root: a restore from there is refused, before anything reads it.
    const copy = path.join(outside, "old-savepoint");
    cpSync(sp.json.path, copy, { recursive: true });
    const restore = (from: string, id: string) => api<Refusal & JobView>("POST", "/jobs", { deploymentId: id, pipeline: pipeline("sp-src", demo, "sp/alerts.jsonl"), restoreFrom: from });
    const refused = await restore(copy, "sp-outside");
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe(`restoreFrom ${JSON.stringify(copy)} must be a path inside the checkpoint folder; it leads out of it (an absolute path)`);
    const rule = await api<Refusal>("POST", "/rule-jobs", { jobId: "r-outside", restoreFrom: copy, rule: { name: "r-outside", branches: [{ version: 1, mode: "shadow", pipeline: pipeline("r-outside", demo, "r/alerts.jsonl") }] } });
    expect(rule.status).toBe(400);
    expect(rule.json.error).toContain("must be a path inside the checkpoint folder");
    expect(() => service.jobs.deploy("sp-outside", unchecked(pipeline("sp-src", demo, "sp/alerts.jsonl")), { restoreFrom: copy })).toThrow(PathOutsideFolderError);
    expect(service.jobs.get("sp-outside")).toBeUndefined();
    // Its own savepoint, inside the root, restores.
    const ok = await restore(sp.json.path, "sp-inside");
    expect(ok.status).toBe(201);
    await api("DELETE", "/jobs/sp-inside");
  });
});
