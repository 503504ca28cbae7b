// deployment.liveMetrics / checkpoints / stop through the tRPC caller, on an in-memory PGlite and a
// fake runner speaking the runner's job API (POST /jobs, GET /jobs/:id, /checkpoints, the metrics
// SSE stream, DELETE).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { fakeRunnerApi, type FakeRunnerApi } from "./fake-runner-api";

const doc = (name: string): PipelineDocumentInput => ({
  format: PIPELINE_FORMAT,
  name,
  settings: { checkpointIntervalMs: 2000, checkpointTimeoutMs: 1000 },
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 200 } },
    { id: "alerts", type: "sink.file", params: { path: "out.jsonl" } },
  ],
  edges: [{ from: "payments", to: "alerts" }],
});

describe("deployment operations", () => {
  let fake: FakeRunnerApi;
  let api: FakeRunnerApi["api"];
  let stopped = false;
  const t0 = Date.parse("2026-06-01T09:00:00Z");

  beforeAll(async () => {
    fake = await fakeRunnerApi((req, res) => {
      const json = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      const url = req.url ?? "";
      if (req.method === "POST" && url === "/jobs") {
        req.resume();
        req.on("end", () => json(201, { id: "job-1", status: "starting" }));
        return;
      }
      if (!url.startsWith("/jobs/job-1")) return json(404, { error: `no job` });
      if (url === "/jobs/job-1/metrics/stream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        let i = 0;
        const push = () => {
          const snap = { jobId: "job-1", pipeline: "ops", status: "running", time: new Date(t0 + i * 500).toISOString(), deadLetters: 0, lastCheckpointId: null, nodes: { payments: { type: "source.demo", recordsIn: 0, recordsOut: i * 100, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: t0 + i * 500 - 2000 } }, sources: {} };
          res.write(`event: metrics\ndata: ${JSON.stringify(snap)}\n\n`);
          i++;
        };
        push();
        const timer = setInterval(push, 20);
        req.on("close", () => clearInterval(timer));
        return;
      }
      if (url === "/jobs/job-1/checkpoints") {
        return json(200, { jobId: "job-1", checkpoints: [2, 1].map((id) => ({ id, triggeredAt: t0 + id * 2000, completedAt: t0 + id * 2000 + 900, durationMs: id === 2 ? 900 : 100, stateBytes: 1000 * id, path: "/x" })) });
      }
      if (req.method === "DELETE") {
        stopped = true;
        return json(200, { id: "job-1", status: "stopped", lastCheckpoint: { id: 3, durationMs: 50, stateBytes: 3000 } });
      }
      return json(200, { id: "job-1", status: stopped ? "stopped" : "running", failure: null, restarts: 0 });
    });
    api = fake.api;
  }, 60_000);

  afterAll(() => fake?.close());

  const deploy = (name: string) => fake.deploy(doc(name));

  it("relays the runner's stream with rates computed from successive counters", async () => {
    const deployment = await deploy("ops-live");
    const controller = new AbortController();
    const subscriber = fake.callerWith(controller.signal);
    const stream = await subscriber.deployment.liveMetrics({ deploymentId: deployment.id });
    const seen: { rate: number; interval: number; watermark: number | null }[] = [];
    for await (const m of stream) {
      const n = m.nodes.payments;
      seen.push({ rate: n?.recordsOutPerSecond ?? -1, interval: m.intervalSeconds, watermark: n?.watermark ?? null });
      if (seen.length === 3) break;
    }
    controller.abort();
    expect(seen.map((s) => s.rate)).toEqual([0, 200, 200]);
    expect(seen[1]?.interval).toBe(0.5);
    expect(seen[2]?.watermark).toBe(t0 + 1000 - 2000);
  });

  it("lists checkpoints with the pipeline's interval and timeout", async () => {
    const deployment = await deploy("ops-checkpoints");
    const result = await api.deployment.checkpoints({ deploymentId: deployment.id });
    expect(result).toMatchObject({ jobStatus: "running", checkpointIntervalMs: 2000, checkpointTimeoutMs: 1000, versionNumber: 1 });
    expect(result.checkpoints.map((c) => [c.id, c.status, c.durationMs, c.stateBytes])).toEqual([
      [2, "completed", 900, 2000],
      [1, "completed", 100, 1000],
    ]);
  });

  it("stops a deployment and records it as stopped", async () => {
    const deployment = await deploy("ops-stop");
    const result = await api.deployment.stop({ deploymentId: deployment.id });
    expect(result).toMatchObject({ jobStatus: "stopped", finalCheckpoint: { id: 3 }, deployment: { id: deployment.id, status: "stopped" } });
    const row = await fake.db.prisma.deployment.findUniqueOrThrow({ where: { id: deployment.id } });
    expect(row.status).toBe("stopped");
    expect(row.stoppedAt).not.toBeNull();
  });

  it("answers NOT_FOUND for an unknown deployment", async () => {
    const error = await api.deployment.checkpoints({ deploymentId: "nope" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe("NOT_FOUND");
  });
});
