// Queryable state over the HTTP API (GET /jobs/:id/state), with the built-in demo source (no
// broker): one card's velocity window and its timers, from the single thread and from the keyed
// subtask that owns the card's key group at parallelism 2; clear 404s naming job, node and key.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { computeOperatorIndexForKeyGroup, keyGroupOf } from "@keyflow/operators";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { eventually } from "../../test/run-cli";
import { requestJson } from "../io/kafka/testing";
import { keyStateResponseSchema, type KeyStateResponse } from "../job/queryable-state";
import type { JobView } from "./jobs";
import { createRunnerService, type RunnerService } from "./main";

let service: RunnerService;

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1" });
  service = await createRunnerService(
    { ...env, kafkaBrokers: undefined, checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-qs-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-qs-data-")) },
    silentLogger,
    { checkpointIntervalMs: 500 },
  );
});
afterAll(() => service?.close());

const api = <T>(method: string, url: string, body?: unknown) => requestJson<T>(service, method, url, body);

const pipeline = (parallelism: number) => ({
  format: "keyflow.pipeline/v1",
  name: `qs-${parallelism}`,
  settings: { parallelism },
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 400, seed: 3, cardCount: 4 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "velocity", type: "velocity", params: { threshold: 1000, windowMs: "10m", idField: "txId" } },
    { id: "alerts", type: "sink.file", params: { path: `qs-${parallelism}/alerts.jsonl` } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "velocity" },
    { from: "velocity", to: "alerts" },
  ],
});

describe("GET /jobs/:id/state", () => {
  for (const parallelism of [1, 2]) {
    it(`returns a key's state and timers at parallelism ${parallelism}`, async () => {
      const id = `qs-${parallelism}`;
      expect((await api<JobView>("POST", "/jobs", { deploymentId: id, pipeline: pipeline(parallelism) })).status).toBe(201);
      const key = "card-000002";
      const answer = await eventually(async () => {
        const r = await api<KeyStateResponse>("GET", `/jobs/${id}/state?node=velocity&key=${key}`);
        return r.status === 200 && JSON.stringify(r.json.state).includes("ts") ? r : undefined;
      }, `state of ${key}`, 30_000);
      const body = keyStateResponseSchema.parse(answer.json);
      expect(body).toMatchObject({ jobId: id, nodeId: "velocity", nodeType: "velocity", key });
      expect(body.state.map((s) => s.name)).toContain("velocity");
      expect(body.timers.eventTime.length).toBeGreaterThan(0);
      if (parallelism === 1) expect(body.subtask).toEqual({ task: "single", index: 0 });
      else expect(body.subtask).toEqual({ task: "keyed", index: computeOperatorIndexForKeyGroup(128, 2, keyGroupOf(key, 128)) });

      const noKey = await api<{ error: string }>("GET", `/jobs/${id}/state?node=velocity&key=card-999999`);
      expect(noKey.status).toBe(404);
      expect(noKey.json.error).toBe(`node "velocity" (velocity) of job "${id}" holds no state or timers for key "card-999999"`);
      const noNode = await api<{ error: string }>("GET", `/jobs/${id}/state?node=nope&key=${key}`);
      expect(noNode.status).toBe(404);
      expect(noNode.json.error).toBe(`job "${id}" has no node "nope"`);
      const noJob = await api<{ error: string }>("GET", `/jobs/nojob/state?node=velocity&key=${key}`);
      expect(noJob.status).toBe(404);
      expect(noJob.json.error).toBe(`no job "nojob"`);
      expect((await api<{ error: string }>("GET", `/jobs/${id}/state?node=velocity`)).status).toBe(400);
      await api("DELETE", `/jobs/${id}`);
    });
  }
});
