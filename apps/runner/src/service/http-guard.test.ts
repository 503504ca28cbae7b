// The job-control API's guard on a real service: the bearer token when one is set, probes open,
// no cross-origin access, JSON-only POSTs, and no listening beyond loopback without a token.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { createRunnerService, type RunnerService } from "./main";

const TOKEN = "a-test-token-of-32-characters-xx";
let service: RunnerService;

const dirs = () => ({ checkpointRoot: mkdtempSync(path.join(tmpdir(), "keyflow-guard-ckpt-")), dataDir: mkdtempSync(path.join(tmpdir(), "keyflow-guard-data-")) });

beforeAll(async () => {
  const env = readEnv({ RUNNER_PORT: "0", KEYFLOW_RUNNER_TOKEN: TOKEN });
  service = await createRunnerService({ ...env, kafkaBrokers: undefined, ...dirs() }, silentLogger);
});
afterAll(() => service?.close());

const pipeline = {
  format: "keyflow.pipeline/v1",
  name: "guarded",
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 50, seed: 1 } },
    { id: "alerts", type: "sink.file", params: { path: "guarded/alerts.jsonl" } },
  ],
  edges: [{ from: "payments", to: "alerts" }],
};

describe("the runner API's guard", () => {
  it("listens on loopback by default", () => {
    expect(readEnv({}).runnerHost).toBe("127.0.0.1");
    expect(service.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("wants the bearer token on job control, but not on the health and metrics probes", async () => {
    const none = await fetch(`${service.url}/jobs`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: string }).error).toMatch(/bearer token.*KEYFLOW_RUNNER_TOKEN/);
    expect((await fetch(`${service.url}/jobs`, { headers: { authorization: `Bearer ${TOKEN.replace("a", "b")}` } })).status).toBe(401);
    expect((await fetch(`${service.url}/jobs`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${service.url}/metrics`)).status).toBe(200);
    const deploy = await fetch(`${service.url}/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ deploymentId: "g1", pipeline }) });
    expect(deploy.status).toBe(401);
  });

  it("refuses a text/plain or form POST (a cross-site post skips the preflight) and any cross-origin preflight", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded"]) {
      const res = await fetch(`${service.url}/jobs`, { method: "POST", headers: { ...auth, "content-type": contentType }, body: JSON.stringify({ deploymentId: "g2", pipeline }) });
      expect(res.status).toBe(415);
      expect(((await res.json()) as { error: string }).error).toBe("POST /jobs takes content-type application/json");
    }
    const preflight = await fetch(`${service.url}/jobs`, { method: "OPTIONS", headers: { ...auth, origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    const listed = (await (await fetch(`${service.url}/jobs`, { headers: auth })).json()) as { jobs: unknown[] };
    expect(listed.jobs).toEqual([]);
    const deployed = await fetch(`${service.url}/jobs`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ deploymentId: "g3", pipeline }) });
    expect(deployed.status).toBe(201);
    expect((await fetch(`${service.url}/jobs/g3`, { method: "DELETE", headers: auth })).status).toBe(200);
  });

  it("will not listen beyond loopback without a token, and says how to fix it", async () => {
    const env = readEnv({ RUNNER_PORT: "0", RUNNER_HOST: "0.0.0.0" });
    await expect(createRunnerService({ ...env, kafkaBrokers: undefined, ...dirs() }, silentLogger)).rejects.toThrow(/RUNNER_HOST=0\.0\.0\.0 .*set KEYFLOW_RUNNER_TOKEN/);
    expect(() => readEnv({ KEYFLOW_RUNNER_TOKEN: "short" })).toThrow(/KEYFLOW_RUNNER_TOKEN: must be at least 16 characters/);
  });
});
