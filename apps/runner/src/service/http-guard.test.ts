// The job-control API's guard on a real service: always a bearer token (generated into a 0600 file
// when none is set), probes open, no cross-origin access, JSON-only POSTs, only allowed Host names
// (DNS rebinding), and a cap on concurrent metric streams that keeps the health check answering.
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import http from "node:http";
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

  it("without KEYFLOW_RUNNER_TOKEN, generates a token into a 0600 file in its state folder, says where, and refuses requests without it (401)", async () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), "keyflow-guard-state-"));
    const lines: string[] = [];
    const log = { ...silentLogger, info: (line: string) => lines.push(line), child: () => silentLogger };
    const env = readEnv({ RUNNER_PORT: "0", KEYFLOW_STATE_DIR: stateDir });
    const own = await createRunnerService({ ...env, kafkaBrokers: undefined, ...dirs() }, log);
    try {
      const file = path.join(stateDir, "runner-token");
      const token = readFileSync(file, "utf8").trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(lines.join("\n")).toContain(file);
      const none = await fetch(`${own.url}/jobs`);
      expect(none.status).toBe(401);
      expect((await fetch(`${own.url}/jobs`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await own.close();
    }
    expect(() => readEnv({ KEYFLOW_RUNNER_TOKEN: "short" })).toThrow(/KEYFLOW_RUNNER_TOKEN: must be at least 16 characters/);
  });

  it("refuses a request whose Host is not an allowed name (DNS rebinding) with 421 and a message", async () => {
    const port = new URL(service.url).port;
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.get({ host: "127.0.0.1", port, path: "/jobs", headers: { host, authorization: `Bearer ${TOKEN}` } }, (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
      });
    const rebound = await get(`attacker.example:${port}`);
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body)).toEqual({ error: expect.stringMatching(/Host "attacker\.example" is not one of this runner's names.*KEYFLOW_RUNNER_ALLOWED_HOSTS/) });
    expect((await get(`attacker.example:${port}`)).status).toBe(421);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, "localhost"]) expect({ host, status: (await get(host)).status }).toEqual({ host, status: 200 });
  });

  it("refuses a body whose Content-Length is over the route's cap (413) before reading it, uploads included", async () => {
    const port = new URL(service.url).port;
    const post = (route: string, contentType: string) =>
      new Promise<{ status: number; sentMb: number }>((resolve, reject) => {
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        const req = http.request({ host: "127.0.0.1", port, path: route, method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": contentType, "content-length": String(300 * chunk.length) } });
        let sentMb = 0;
        let answered = false;
        req.on("response", (res) => {
          answered = true;
          res.resume();
          resolve({ status: res.statusCode ?? 0, sentMb });
          req.destroy();
        });
        req.on("error", (error) => {
          if (!answered) reject(error);
        });
        const pump = () => {
          while (sentMb < 300 && !answered) {
            sentMb += 1;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          if (!answered) req.end();
        };
        pump();
      });
    for (const [route, type] of [["/jobs", "application/json"], ["/files", "application/x-ndjson"]] as const) {
      const answer = await post(route, type);
      expect({ route, status: answer.status, early: answer.sentMb < 64 }).toEqual({ route, status: 413, early: true });
    }
  }, 60_000);

  it("caps concurrent metric streams (429 beyond the cap) so that 2,000 of them leave /healthz answering", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const deployed = await fetch(`${service.url}/jobs`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ deploymentId: "streams", pipeline }) });
    expect(deployed.status).toBe(201);
    const port = new URL(service.url).port;
    const open: http.ClientRequest[] = [];
    const statuses = await Promise.all(
      Array.from(
        { length: 2_000 },
        () =>
          new Promise<number>((resolve) => {
            const req = http.get({ host: "127.0.0.1", port, path: "/jobs/streams/metrics/stream", headers: auth, agent: false }, (res) => {
              resolve(res.statusCode ?? 0);
              if (res.statusCode !== 200) res.resume();
            });
            req.on("error", () => resolve(-1));
            open.push(req);
          }),
      ),
    );
    try {
      const count = (s: number) => statuses.filter((x) => x === s).length;
      expect({ ok: count(200), refused: count(429) }).toEqual({ ok: 32, refused: 2_000 - 32 });
      const health = await fetch(`${service.url}/healthz`);
      expect(health.status).toBe(200);
    } finally {
      for (const req of open) req.destroy();
      await fetch(`${service.url}/jobs/streams`, { method: "DELETE", headers: auth });
    }
  }, 60_000);
});
