// POST /dry-run on the runner service: a draft with a file source runs on JSON lines from the
// request; invalid pipelines and requests are refused with the problem named.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import type { DryRunResult } from "../job/dry-run";
import { silentLogger } from "../log";
import { createRunnerService, type RunnerService } from "./main";

let service: RunnerService;

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  service = await createRunnerService(
    { ...env, kafkaBrokers: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-dry-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-dry-data-")) },
    silentLogger,
  );
});
afterAll(() => service?.close());

async function post<T>(body: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${service.url}/dry-run`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as T };
}

const pipeline = {
  format: "keyflow.pipeline/v1",
  name: "dry-velocity",
  nodes: [
    // A Kafka source in the draft: the sample replaces it, so no broker is needed.
    { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts", fields: ["txId", "cardId", "amount", "ts"] } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "vel", type: "velocity", params: { threshold: 2, windowMs: "5m", idField: "txId" } },
    { id: "alerts", type: "sink.kafka", params: { topic: "alerts" } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
  ],
};

const t0 = Date.parse("2026-05-01T08:00:00Z");
const lines = [
  { txId: "a", cardId: "c1", amount: 5, ts: t0 },
  { txId: "b", cardId: "c2", amount: 7, ts: t0 + 1_000 },
  { txId: "c", cardId: "c1", amount: 9, ts: t0 + 60_000 },
].map((r) => JSON.stringify(r));

describe("POST /dry-run", () => {
  it("runs the draft on the sample lines and answers with counts, alerts and their evidence", async () => {
    const r = await post<DryRunResult>({ pipeline, records: lines });
    expect(r.status).toBe(200);
    expect(r.json.pipeline).toBe("dry-velocity");
    expect(r.json.inputs).toEqual({ payments: { records: 3, label: "sample" } });
    expect(r.json.nodes.payments?.ports.out?.count).toBe(3);
    expect(r.json.nodes.vel?.ports).toMatchObject({ out: { count: 1 }, late: { count: 0 } });
    expect(r.json.alerts.count).toBe(1);
    expect(r.json.alerts.items[0]?.evidence.map((e) => e.id)).toEqual(["a", "c"]);
    expect(r.json.deadLetters).toEqual({ count: 0, items: [] });
    // nothing was deployed
    expect((await (await fetch(`${service.url}/jobs`, { headers: { authorization: `Bearer ${service.token}` } })).json()) as unknown).toEqual({ jobs: [] });
  });

  it("refuses an invalid pipeline with the problems, naming the node", async () => {
    const bad = { ...pipeline, nodes: pipeline.nodes.map((n) => (n.id === "vel" ? { ...n, params: { threshold: 0, windowMs: "5m" } } : n)) };
    const r = await post<{ error: string; issues: string[] }>({ pipeline: bad, records: lines });
    expect(r.status).toBe(400);
    expect(r.json.issues.join("\n")).toMatch(/node "vel": param "threshold"/);
  });

  it("refuses a request without a sample, and a sample for a node that is no source", async () => {
    const none = await post<{ issues: string[] }>({ pipeline });
    expect(none.status).toBe(400);
    expect(none.json.issues.join("\n")).toMatch(/give `records`/);
    const wrong = await post<{ error: string }>({ pipeline, records: lines, sourceNodeId: "vel" });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toMatch(/node "vel" is not a source/);
  });

  it("needs brokers to sample the last records of a topic", async () => {
    const r = await post<{ error: string }>({ pipeline, records: { lastN: 10 } });
    expect(r.status).toBe(502);
    expect(r.json.error).toMatch(/no Kafka brokers/);
  });
});
