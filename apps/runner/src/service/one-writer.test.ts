// Issue 35 point 5 on the runner: two jobs never write one output. A deploy (or a rule job's branch
// set) whose file, topic or dead-letter output a running job already writes is refused with 409,
// naming both jobs and nodes; a rule job's own branches share their outputs through its routing.
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";
import { requestJson } from "../io/kafka/testing";

let service: RunnerService;
const base = mkdtempSync(path.join(tmpdir(), "keyflow-one-writer-"));

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  for (const d of ["data", "checkpoints"]) mkdirSync(path.join(base, d));
  service = await createRunnerService({ ...env, kafkaBrokers: undefined, dataDir: path.join(base, "data"), checkpointRoot: path.join(base, "checkpoints") }, silentLogger, { checkpointIntervalMs: 100 });
});
afterAll(() => service?.close());

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

function pipeline(name: string, sink: { id: string; type: string; params: Record<string, unknown> }) {
  return {
    format: "keyflow.pipeline/v1",
    name,
    nodes: [{ id: "payments", type: "source.demo", params: { eventsPerSecond: 100, seed: 5 } }, sink],
    edges: [{ from: "payments", to: sink.id }],
  };
}
const fileSink = (id: string, p: string) => ({ id, type: "sink.file", params: { path: p } });

describe("one writer per output across the runner's jobs", () => {
  it("refuses a job writing a file, or a dead-letter file, that a running job writes, naming both jobs and nodes", async () => {
    expect((await api("POST", "/jobs", { deploymentId: "first", pipeline: pipeline("first", fileSink("alerts", "shared/alerts.jsonl")) })).status).toBe(201);
    const same = await api<{ error: string }>("POST", "/jobs", { deploymentId: "second", pipeline: pipeline("second", fileSink("out", "shared/./alerts.jsonl")) });
    expect(same.status).toBe(409);
    expect(same.json.error).toBe(
      'job "second": node "out" writes file "shared/./alerts.jsonl", which node "alerts" of running job "first" writes too — one writer per output: stop job "first" first, or give the sink its own output',
    );
    // The first job's dead letters go to shared/first.dlq.jsonl: a sink there is a second writer too.
    const dlq = await api<{ error: string }>("POST", "/jobs", { deploymentId: "third", pipeline: pipeline("third", fileSink("out", "shared/first.dlq.jsonl")) });
    expect(dlq.status).toBe(409);
    expect(dlq.json.error).toContain('which the dead-letter output of running job "first" writes too');
    // A rule job whose branch writes it is refused the same way.
    const rule = await api<{ error: string }>("POST", "/rule-jobs", { jobId: "rule-1", rule: { name: "rule-1", branches: [{ version: 1, mode: "shadow", pipeline: pipeline("rule-1", fileSink("alerts", "shared/alerts.jsonl")) }] } });
    expect(rule.status).toBe(409);
    expect(rule.json.error).toContain('job "rule-1": node "v1-alerts" (enforcing) writes file "shared/alerts.jsonl", which node "alerts" of running job "first" writes too');
    expect(service.jobs.get("second")).toBeUndefined();

    // Once the first job stops, the output is free.
    expect((await api<JobView>("DELETE", "/jobs/first")).json.status).toBe("stopped");
    expect((await api("POST", "/jobs", { deploymentId: "second", pipeline: pipeline("second", fileSink("out", "shared/alerts.jsonl")) })).status).toBe(201);
    await api("DELETE", "/jobs/second");
  });

  it("refuses a job writing a Kafka topic a running job writes", async () => {
    const kafka = (id: string, topic: string) => ({ id, type: "sink.kafka", params: { topic } });
    // Without a broker the first job keeps restarting: it is still the topic's writer.
    expect((await api("POST", "/jobs", { deploymentId: "k1", pipeline: pipeline("k1", kafka("alerts", "fraud.alerts")) })).status).toBe(201);
    const same = await api<{ error: string }>("POST", "/jobs", { deploymentId: "k2", pipeline: pipeline("k2", kafka("enforce", "fraud.alerts")) });
    expect(same.status).toBe(409);
    expect(same.json.error).toContain('job "k2": node "enforce" writes topic "fraud.alerts", which node "alerts" of running job "k1" writes too');
    const dlq = await api<{ error: string }>("POST", "/jobs", { deploymentId: "k3", pipeline: pipeline("k3", kafka("out", "k1.dlq")) });
    expect(dlq.status).toBe(409);
    expect(dlq.json.error).toContain('writes topic "k1.dlq", which the dead-letter output of running job "k1" writes too');
    await api("DELETE", "/jobs/k1");
  });

  it("lets a rule job's versions share their sink (its routing is the one writer), and refuses a version writing the shadow output", async () => {
    const v = (rule: string, version: number, mode: string, sinkPath: string) => ({ version, mode, pipeline: pipeline(rule, fileSink("alerts", sinkPath)) });
    const ok = await api<JobView>("POST", "/rule-jobs", { jobId: "rule-2", rule: { name: "rule-2", branches: [v("rule-2", 1, "enforcing", "r2/alerts.jsonl"), v("rule-2", 2, "shadow", "r2/alerts.jsonl")] } });
    expect(ok.status).toBe(201);
    await api("DELETE", "/jobs/rule-2");
    // v1 enforces into the file the rule job gives v2's shadow alerts.
    const clash = await api<{ error: string }>("POST", "/rule-jobs", { jobId: "rule-3", rule: { name: "rule-3", branches: [v("rule-3", 1, "enforcing", "r3/rule-3.shadow.v2.alerts.jsonl"), v("rule-3", 2, "shadow", "r3/x.jsonl")] } });
    expect(clash.status).toBe(409);
    expect(clash.json.error).toContain('node "v2-alerts" (shadow) writes file "r3/rule-3.shadow.v2.alerts.jsonl", which node "v1-alerts" (enforcing) writes too');
  });
});
