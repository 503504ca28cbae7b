// The runner service's HTTP API with the built-in demo source (no broker): deploy, status, live
// metrics stream, Prometheus text, refusal of invalid pipelines with the node named, and stop.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { eventually } from "../../test/run-cli";
import type { LiveSnapshot } from "./http";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";

let service: RunnerService;

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  service = await createRunnerService(
    { ...env, kafkaBrokers: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-svc-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-svc-data-")) },
    silentLogger,
    { checkpointIntervalMs: 200 },
  );
});
afterAll(() => service?.close());

async function api<T>(method: string, url: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${service.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${service.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

const demoPipeline = {
  format: "keyflow.pipeline/v1",
  name: "demo-big",
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 500, seed: 7 } },
    { id: "big", type: "filter", params: { expression: "amount > 100" } },
    { id: "alerts", type: "sink.file", params: { path: "demo/alerts.jsonl" } },
  ],
  edges: [
    { from: "payments", to: "big" },
    { from: "big", to: "alerts" },
  ],
};

describe("runner service", () => {
  it("answers /healthz", async () => {
    const r = await api<{ status: string }>("GET", "/healthz");
    expect(r).toEqual({ status: 200, json: { status: "ok", jobs: 0 } });
  });

  it("refuses an invalid pipeline with 400 and the problems, naming the node", async () => {
    const bad = { ...demoPipeline, nodes: [...demoPipeline.nodes.slice(0, 2), { id: "alerts", type: "sink.nowhere", params: {} }] };
    const r = await api<{ error: string; issues: string[] }>("POST", "/jobs", { deploymentId: "bad-1", pipeline: bad });
    expect(r.status).toBe(400);
    expect(r.json.issues.join("\n")).toMatch(/node "alerts"/);
    const r2 = await api<{ issues: string[] }>("POST", "/jobs", { pipeline: demoPipeline });
    expect(r2.status).toBe(400);
    expect(r2.json.issues.join("\n")).toMatch(/deploymentId/);
  });

  it("deploys, reports status and live figures, serves Prometheus metrics, and stops", async () => {
    const created = await api<JobView>("POST", "/jobs", { deploymentId: "demo-1", pipeline: demoPipeline });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ id: "demo-1", jobId: "demo-1", pipeline: "demo-big" });

    const conflict = await api<{ error: string }>("POST", "/jobs", { deploymentId: "demo-1", pipeline: demoPipeline });
    expect(conflict.status).toBe(409);

    const running = await eventually(async () => {
      const j = (await api<JobView>("GET", "/jobs/demo-1")).json;
      return j.status === "running" && (j.nodes.big?.recordsIn ?? 0) > 50 && j.lastCheckpoint !== null ? j : undefined;
    }, "the demo job to run and checkpoint");
    expect(running.nodes.payments?.type).toBe("source.demo");

    const list = await api<{ jobs: JobView[] }>("GET", "/jobs");
    expect(list.json.jobs.map((j) => j.id)).toEqual(["demo-1"]);

    // Live figures for the canvas: server-sent events, one snapshot per interval.
    const res = await fetch(`${service.url}/jobs/demo-1/metrics/stream`, { headers: { authorization: `Bearer ${service.token}` } });
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = res.body?.getReader();
    if (!reader) throw new Error("no body");
    let text = "";
    const events: LiveSnapshot[] = [];
    while (events.length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      let end: number;
      while ((end = text.indexOf("\n\n")) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        if (data) events.push(JSON.parse(data.slice(6)) as LiveSnapshot);
      }
    }
    await reader.cancel();
    expect(events[1]?.jobId).toBe("demo-1");
    expect(Object.keys(events[1]?.nodes ?? {}).sort()).toEqual(["alerts", "big", "payments"]);
    expect(events[1]?.nodes.payments?.recordsOutPerSecond).toBeGreaterThan(0);

    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^keyflow_records_in_total\{job="demo-1",node="big"\} \d+/m);
    expect(metrics).toMatch(/^keyflow_watermark_milliseconds\{job="demo-1",node="big"\} \d+/m);
    expect(metrics).toMatch(/^keyflow_job_status\{job="demo-1",pipeline="demo-big",status="running"\} 1/m);
    expect(metrics).toMatch(/^process_cpu_seconds_total /m);

    const stopped = await api<JobView>("DELETE", "/jobs/demo-1");
    expect(stopped.status).toBe(200);
    expect(stopped.json.status).toBe("stopped");
    expect(stopped.json.lastCheckpoint?.id).toBeGreaterThan(running.lastCheckpoint?.id ?? 0);

    const missing = await api<{ error: string }>("GET", "/jobs/nope");
    expect(missing.status).toBe(404);
  });

  it("a failing job does not take the service down; it is restarted with a delay", async () => {
    const broken = {
      ...demoPipeline,
      name: "broken",
      nodes: [{ id: "payments", type: "source.file", params: { path: "does/not/exist.jsonl", timestampField: "ts" } }, ...demoPipeline.nodes.slice(1)],
    };
    const created = await api<JobView>("POST", "/jobs", { deploymentId: "broken-1", pipeline: broken });
    expect(created.status).toBe(201);
    const failed = await eventually(async () => {
      const j = (await api<JobView>("GET", "/jobs/broken-1")).json;
      return j.status === "restarting" ? j : undefined;
    }, "the broken job to be scheduled for restart");
    expect(failed.failure).toMatch(/node "payments": cannot read "does\/not\/exist\.jsonl"/);
    expect(failed.nextRestartAt).not.toBeNull();
    expect((await api<{ status: string }>("GET", "/healthz")).status).toBe(200);
    const stopped = await api<JobView>("DELETE", "/jobs/broken-1");
    expect(stopped.json.status).toBe("stopped");
  });
});
