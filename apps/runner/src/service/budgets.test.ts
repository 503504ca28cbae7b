// Budgets on user code, against the real runner service: a job that keeps too much state fails
// alone, naming node and key, while another job on the same runner keeps processing.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { eventually } from "../../test/run-cli";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";
import { requestJson } from "../io/kafka/testing";

let service: RunnerService;

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  service = await createRunnerService(
    { ...env, kafkaBrokers: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-budget-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-budget-data-")) },
    silentLogger,
    { checkpointIntervalMs: 500 },
  );
});
afterAll(() => service?.close());

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

/** A plain job that must keep running next to the one that breaks its budget. */
const bystander = {
  format: "keyflow.pipeline/v1",
  name: "bystander",
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 200, seed: 3 } },
    { id: "big", type: "filter", params: { expression: "amount > 100" } },
    { id: "alerts", type: "sink.file", params: { path: "bystander/alerts.jsonl" } },
  ],
  edges: [
    { from: "payments", to: "big" },
    { from: "big", to: "alerts" },
  ],
};

async function processedBy(id: string, node: string): Promise<number> {
  return (await api<JobView>("GET", `/jobs/${id}`)).json.nodes[node]?.recordsIn ?? 0;
}

/** The job fails (and is scheduled for restart) with `message`; the bystander goes on meanwhile. */
async function expectFailsAlone(id: string, bystanderId: string, message: RegExp): Promise<void> {
  const failed = await eventually(async () => {
    const j = (await api<JobView>("GET", `/jobs/${id}`)).json;
    return j.status === "restarting" || j.status === "failed" ? j : undefined;
  }, `job ${id} to fail on its budget`, 20_000);
  expect(failed.failure).toMatch(message);
  expect((await api<{ status: string }>("GET", "/healthz")).status).toBe(200);
  const before = await processedBy(bystanderId, "big");
  await eventually(async () => (await processedBy(bystanderId, "big")) > before + 50, "the bystander job to keep processing", 10_000);
  expect((await api<JobView>("GET", `/jobs/${bystanderId}`)).json.status).toBe("running");
  await api("DELETE", `/jobs/${id}`);
}

describe("job budgets fail that job, never the runner", () => {
  it("a custom node keeping 3.5 MB per key fails its job naming node and key; another job keeps running", async () => {
    expect((await api("POST", "/jobs", { deploymentId: "bystander-1", pipeline: bystander })).status).toBe(201);
    const hoarder = {
      format: "keyflow.pipeline/v1",
      name: "hoarder",
      nodes: [
        { id: "payments", type: "source.demo", params: { eventsPerSecond: 10, seed: 5 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" } },
        {
          id: "remember",
          type: "process.custom",
          params: {
            code: `export function processElement(record: InputRecord, ctx: Context): void {
  ctx.state.value<string>("blob").update("x".repeat(3_500_000));
  ctx.output(record.value);
}`,
          },
        },
        { id: "out", type: "sink.file", params: { path: "hoarder/out.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "remember" },
        { from: "remember", to: "out" },
      ],
    };
    expect((await api("POST", "/jobs", { deploymentId: "hoarder-1", pipeline: hoarder })).status).toBe(201);
    await expectFailsAlone("hoarder-1", "bystander-1", /^node "remember": key "[^"]+" keeps 3\.3 MB of state, over the per-key limit of 1 MB \(settings\.maxStateBytesPerKey\)/);
  }, 60_000);

  it.each([1, 2])("a job whose keyed state crosses settings.maxJobStateBytes fails naming its largest node (parallelism %i)", async (parallelism) => {
    const dedupAll = {
      format: "keyflow.pipeline/v1",
      name: `dedup-all-${parallelism}`,
      settings: { maxJobStateBytes: 64 * 1024, parallelism },
      nodes: [
        { id: "payments", type: "source.demo", params: { eventsPerSecond: 2000, seed: 9 } },
        { id: "seen", type: "dedup", params: { field: "txId", ttlMs: "1d" } },
        { id: "out", type: "sink.file", params: { path: `dedup-all-${parallelism}/out.jsonl` } },
      ],
      edges: [
        { from: "payments", to: "seen" },
        { from: "seen", to: "out" },
      ],
    };
    const created = await api<{ error?: string; issues?: string[] }>("POST", "/jobs", { deploymentId: `dedup-all-${parallelism}`, pipeline: dedupAll });
    expect(created.json.issues ?? []).toEqual([]);
    await expectFailsAlone(`dedup-all-${parallelism}`, "bystander-1", /^the job keeps [\d.]+ KB of state, over its memory budget of 64 KB \(settings\.maxJobStateBytes\); node "seen" keeps/);
  }, 60_000);
});

describe("dry runs run apart from the jobs", () => {
  it("a dry run that exhausts its memory is an error in the answer; /healthz answers and a running job keeps processing", async () => {
    if ((await api<JobView>("GET", "/jobs/bystander-1")).status !== 200) await api("POST", "/jobs", { deploymentId: "bystander-1", pipeline: bystander });
    await eventually(async () => (await processedBy("bystander-1", "big")) > 0, "the bystander job to run");
    // Every record grows a list of 4^9 numbers (within an expression's budget), and every port keeps
    // its first 1,000 records: gigabytes, for a draft and a few kilobytes of sample.
    let grow = "l9";
    for (let i = 9; i >= 1; i--) grow = `cel.bind(l${i}, l${i - 1} + l${i - 1} + l${i - 1} + l${i - 1}, ${grow})`;
    const hog = (id: string) => ({ id, type: "map", params: { expression: `{"id": id, "pad": cel.bind(l0, [id], ${grow})}` } });
    const draft = {
      format: "keyflow.pipeline/v1",
      name: "memory-hog",
      nodes: [
        { id: "payments", type: "source.file", params: { path: "sample.jsonl", timestampField: "ts" } },
        hog("grow1"),
        hog("grow2"),
        hog("grow3"),
        { id: "out", type: "sink.file", params: { path: "hog/out.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "grow1" },
        { from: "grow1", to: "grow2" },
        { from: "grow2", to: "grow3" },
        { from: "grow3", to: "out" },
      ],
    };
    const records = Array.from({ length: 1_000 }, (_, i) => JSON.stringify({ id: i, ts: 1_700_000_000_000 + i }));
    const res = await api<{ error: string }>("POST", "/dry-run", { pipeline: draft, records, recordLimit: 1_000 });
    expect(res.json.error ?? JSON.stringify(res.json).slice(0, 300)).toMatch(/^the dry run ran out of memory \(its limit is 256 MB\) and was stopped/);
    expect(res.status).toBe(422);
    expect((await api<{ status: string }>("GET", "/healthz")).status).toBe(200);
    const before = await processedBy("bystander-1", "big");
    await eventually(async () => (await processedBy("bystander-1", "big")) > before + 50, "the bystander job to keep processing", 10_000);
    expect((await api<JobView>("GET", "/jobs/bystander-1")).json.status).toBe("running");
  }, 90_000);
});
