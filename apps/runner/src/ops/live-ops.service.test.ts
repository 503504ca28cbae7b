// Live operations through the runner's HTTP API on the built-in demo source (no broker): every
// node's busy / backpressured / idle time on the metrics stream, and a sink throttle that makes the
// nodes above the sink backpressured until it is lifted; single-threaded and parallel jobs.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import type { LiveSnapshot } from "../service/http";
import { createRunnerService, type RunnerService } from "../service/main";
import { watchStream } from "./testing";

let service: RunnerService;

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  service = await createRunnerService(
    { ...env, kafkaBrokers: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-ops-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-ops-data-")) },
    silentLogger,
    { checkpointIntervalMs: 500 },
  );
});
afterAll(() => service?.close());

async function post(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${service.url}${url}`, { method: "POST", headers: { authorization: `Bearer ${service.token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const watch = <T>(jobId: string, what: string, check: (s: LiveSnapshot) => T | undefined) => watchStream(service, jobId, what, check);

function pipeline(name: string, parallelism: number) {
  return {
    format: "keyflow.pipeline/v1",
    name,
    settings: { parallelism, checkpointIntervalMs: 500 },
    nodes: [
      { id: "payments", type: "source.demo", params: { eventsPerSecond: 400, seed: 7 } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "big", type: "filter", params: { expression: "amount > 0" } },
      { id: "out", type: "sink.file", params: { path: `${name}/out.jsonl` } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "big" },
      { from: "big", to: "out" },
    ],
  };
}

describe.each([1, 2])("live operations, parallelism %i", (parallelism) => {
  const id = `ops-p${parallelism}`;
  it("reports task times for every node, and a throttled sink backpressures the nodes above it until lifted", async () => {
    expect((await post("/jobs", { deploymentId: id, pipeline: pipeline(id, parallelism) })).status).toBe(201);

    // Running free: every node has figures, nothing is backpressured.
    const free = await watch(id, "figures on every node without backpressure", (s) => {
      const n = s.nodes;
      const all = ["payments", "byCard", "big", "out"].every((k) => n[k]?.busyTimeMsPerSecond !== undefined && n[k]?.idleTimeMsPerSecond !== undefined);
      return all && (n["out"]?.recordsIn ?? 0) > 100 && (n["payments"]?.backPressuredTimeMsPerSecond ?? 1000) <= 100 ? s : undefined;
    });
    expect(free.nodes["out"]?.throttleRecordsPerSecond).toBeNull();
    if (parallelism > 1) expect(free.subtasks.filter((t) => t.task === "keyed").map((t) => t.subtask)).toEqual([0, 1]);
    else expect(free.subtasks).toEqual([]);

    // The demo source's one partition: records, offset, its watermark, not idle.
    const p0 = free.sourcePartitions["payments"]?.partitions[0];
    expect(p0).toMatchObject({ partition: 0, idle: false, lag: null });
    expect(p0?.records).toBeGreaterThan(100);
    expect(Number(p0?.lastOffset)).toBeGreaterThan(100);
    expect(p0?.watermark).toBeGreaterThan(Date.now() - 60_000);

    // Skew: records per subtask and the hottest keys at the keyed operator (parallel jobs only).
    if (parallelism > 1) {
      const [big] = free.skew;
      expect(big?.node).toBe("byCard");
      expect(big?.records.length).toBe(2);
      expect((big?.records ?? []).every((r) => r > 0)).toBe(true);
      expect(big?.hotKeys.length).toBeGreaterThan(0);
      expect(big?.hotKeys[0]?.key).toMatch(/./);
    } else expect(free.skew).toEqual([]);

    // The drill-down tap: the last records into the sink.
    const taps = (await (await fetch(`${service.url}/jobs/${id}/nodes/out/taps`, { headers: { authorization: `Bearer ${service.token}` } })).json()) as { records: Array<{ value: Record<string, unknown> }>; recordsSeen: number };
    expect(taps.records.length).toBe(20);
    expect(taps.recordsSeen).toBeGreaterThan(20);
    expect(taps.records[0]?.value).toHaveProperty("cardId");
    expect((await fetch(`${service.url}/jobs/${id}/nodes/nope/taps`, { headers: { authorization: `Bearer ${service.token}` } })).status).toBe(404);

    // Prometheus: the checkpoint timeout, and every node's busy and backpressured time.
    const prom = await (await fetch(`${service.url}/metrics`)).text();
    expect(prom).toMatch(new RegExp(`^keyflow_checkpoint_timeout_milliseconds\\{job="${id}"\\} 600000$`, "m"));
    expect(prom).toMatch(new RegExp(`^keyflow_node_backpressured_time_ms_per_second\\{job="${id}",node="payments"\\} \\d+`, "m"));
    expect(prom).toMatch(new RegExp(`^keyflow_node_busy_time_ms_per_second\\{job="${id}",node="out"\\} \\d+`, "m"));

    // Refusals name what is wrong.
    const notSink = await post(`/jobs/${id}/nodes/big/throttle`, { recordsPerSecond: 5 });
    expect(notSink.status).toBe(400);
    expect(notSink.json["error"]).toMatch(/node "big" is not a sink of this job/);
    expect((await post(`/jobs/${id}/nodes/out/throttle`, { recordsPerSecond: 0 })).status).toBe(400);
    expect((await post(`/jobs/nope/nodes/out/throttle`, { recordsPerSecond: 5 })).status).toBe(404);

    const set = await post(`/jobs/${id}/nodes/out/throttle`, { recordsPerSecond: 20 });
    expect(set).toEqual({ status: 200, json: { jobId: id, throttles: { out: 20 } } });
    const throttled = await watch(id, "the source backpressured above 50 % and the sink busy", (s) =>
      (s.nodes["payments"]?.backPressuredTimeMsPerSecond ?? 0) > 500 && (s.nodes["out"]?.busyTimeMsPerSecond ?? 0) > 500 ? s : undefined,
    );
    expect(throttled.nodes["out"]).toMatchObject({ throttleRecordsPerSecond: 20, backPressuredTimeMsPerSecond: 0 });

    expect((await post(`/jobs/${id}/nodes/out/throttle`, { recordsPerSecond: null })).json).toEqual({ jobId: id, throttles: { out: null } });
    await watch(id, "the backpressure gone once the throttle is lifted", (s) => ((s.nodes["payments"]?.backPressuredTimeMsPerSecond ?? 1000) <= 100 && (s.nodes["out"]?.busyTimeMsPerSecond ?? 1000) < 500 ? s : undefined));

    const stopped = await fetch(`${service.url}/jobs/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${service.token}` } });
    expect(stopped.status).toBe(200);
  }, 150_000); // past watchStream's 60 s per condition, so that a slow machine fails on the condition it names
});

describe("skew of a parallel job", () => {
  it("flags the subtask that carries one hot key, with the key as the hottest", async () => {
    const id = "ops-skew";
    // One card: every payment has the same key, so one subtask of four carries them all.
    const base = pipeline(id, 4);
    const doc = { ...base, nodes: [{ id: "payments", type: "source.demo", params: { eventsPerSecond: 400, seed: 7, cardCount: 1 } }, ...base.nodes.slice(1)] };
    expect((await post("/jobs", { deploymentId: id, pipeline: doc })).status).toBe(201);
    const skewed = await watch(id, "a skewed subtask at the keyed operator", (s) => (s.skew[0] && s.skew[0].skewedSubtasks.length > 0 && s.skew[0].hotKeys.length > 0 ? s.skew[0] : undefined));
    expect(skewed.node).toBe("byCard");
    expect(skewed.records.filter((r) => r > 0).length).toBe(1);
    expect(skewed.skewedSubtasks).toEqual([skewed.records.findIndex((r) => r > 0)]);
    expect(skewed.hotKeys[0]).toMatchObject({ subtask: skewed.skewedSubtasks[0] });
    expect(skewed.hotKeys[0]?.share).toBeGreaterThan(0.5);
    expect((await fetch(`${service.url}/jobs/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${service.token}` } })).status).toBe(200);
  }, 90_000);
});

describe("failed checkpoints of a parallel job", () => {
  it("lists a checkpoint aborted by its timeout with the reason, and counts it on /metrics", async () => {
    const id = "ops-timeout";
    const base = pipeline(id, 2);
    // 1 ms: no checkpoint gets every subtask's acknowledgement in time.
    const doc = { ...base, settings: { ...base.settings, checkpointTimeoutMs: 1 } };
    expect((await post("/jobs", { deploymentId: id, pipeline: doc })).status).toBe(201);
    const failed = await watch(id, "an aborted checkpoint", (s) => s.failedCheckpoints[0]);
    expect(failed.reason).toBe("not acknowledged by every task within checkpointTimeoutMs (1 ms)");
    expect(failed.failedAt).toBeGreaterThanOrEqual(failed.triggeredAt);
    const prom = await (await fetch(`${service.url}/metrics`)).text();
    expect(prom).toMatch(new RegExp(`^keyflow_checkpoints_failed_total\\{job="${id}"\\} [1-9]\\d*$`, "m"));
    expect(prom).toMatch(new RegExp(`^keyflow_checkpoint_timeout_milliseconds\\{job="${id}"\\} 1$`, "m"));
    expect((await fetch(`${service.url}/jobs/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${service.token}` } })).status).toBe(200);
  }, 90_000);
});
