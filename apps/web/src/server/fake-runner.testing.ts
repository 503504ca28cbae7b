// A runner over HTTP for the web app's server tests (no engine): it keeps a rule job's routing,
// answers the job controls (checkpoints, savepoints, stop, throttle) and records every call, so a
// test sees what the web app asked the runner to do, and in which order.
import http from "node:http";
import { afterAll, beforeAll } from "vitest";
import { createDb, migrate, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { asUser } from "./auth/test-user";
import { createCaller } from "./root";
import { createContext } from "./trpc";

export interface FakeRunner {
  server: http.Server;
  /** The branches' modes, by version number, of the rule job last started or switched. */
  readonly modes: Record<string, string>;
  calls: { method: string; url: string; body: unknown }[];
  /** The answer to POST /rule-jobs/check, set by the test. */
  state: { check: { compatible: boolean; problems: string[] } };
  /** Starts listening on a free port; resolves with the runner's URL. */
  listen(): Promise<string>;
}

export function fakeRunner(): FakeRunner {
  // Each rule job's branches' modes, by job id.
  const jobs = new Map<string, Record<string, string>>();
  let last: Record<string, string> = {};
  const modesOf = (jobId: string) => {
    last = jobs.get(jobId) ?? {};
    jobs.set(jobId, last);
    return last;
  };
  const calls: FakeRunner["calls"] = [];
  let checkpoint = 0;
  const state = { check: { compatible: true, problems: [] as string[] } };
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk: Buffer) => (raw += chunk.toString()));
    req.on("end", () => {
      const body = raw ? (JSON.parse(raw) as Record<string, unknown>) : null;
      calls.push({ method: req.method ?? "", url: req.url ?? "", body });
      const send = (status: number, json: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
      const url = req.url ?? "";
      if (req.method === "POST" && url === "/rule-jobs") {
        const rule = body?.rule as { branches: { version: number; mode: string }[] };
        jobs.set(String(body?.jobId), Object.fromEntries(rule.branches.map((b) => [String(b.version), b.mode])));
        return send(201, { id: body?.jobId, status: "running", routing: { modes: modesOf(String(body?.jobId)) } });
      }
      if (req.method === "POST" && url === "/rule-jobs/check") {
        return send(200, { checkpoint: `/data/checkpoints/${String(body?.jobId)}/chk-${checkpoint}`, ...state.check, dropped: [] });
      }
      // A job of its own (test mode, or a restore of one).
      if (req.method === "POST" && url === "/jobs") return send(201, { jobId: `job-${String(body?.deploymentId)}`, status: "running" });
      const routing = /^\/jobs\/([^/]+)\/routing$/.exec(url);
      if (req.method === "POST" && routing) {
        const modes = modesOf(decodeURIComponent(routing[1] ?? ""));
        const before = { ...modes };
        Object.assign(modes, (body as { modes: Record<string, string> }).modes);
        checkpoint += 1;
        const at = new Date().toISOString();
        return send(200, { checkpointId: checkpoint, sources: { payments: { "0": 42 } }, before, after: { ...modes }, requestedAt: at, completedAt: at });
      }
      const stop = /^\/jobs\/([^/]+)\/stop/.exec(url);
      if (req.method === "POST" && stop) return send(200, { id: decodeURIComponent(stop[1] ?? ""), status: "stopped", savepointPath: `/data/checkpoints/savepoints/${decodeURIComponent(stop[1] ?? "")}/savepoint-${calls.length}` });
      const savepoint = /^\/jobs\/([^/]+)\/savepoint$/.exec(url);
      if (req.method === "POST" && savepoint) return send(200, { jobId: decodeURIComponent(savepoint[1] ?? ""), path: `/data/checkpoints/savepoints/${decodeURIComponent(savepoint[1] ?? "")}/savepoint-${calls.length}` });
      const throttle = /^\/jobs\/([^/]+)\/nodes\/([^/]+)\/throttle$/.exec(url);
      if (req.method === "POST" && throttle) return send(200, { jobId: decodeURIComponent(throttle[1] ?? ""), throttles: { [decodeURIComponent(throttle[2] ?? "")]: (body as { recordsPerSecond: number | null }).recordsPerSecond } });
      const checkpoints = /^\/jobs\/([^/]+)\/checkpoints$/.exec(url);
      if (req.method === "GET" && checkpoints) {
        const jobId = decodeURIComponent(checkpoints[1] ?? "");
        const kept = [checkpoint + 2, checkpoint + 1].map((id) => ({ id, triggeredAt: Date.now(), durationMs: 5, stateBytes: 100, path: `/data/checkpoints/${jobId}/chk-${id}` }));
        return send(200, { jobId, checkpoints: kept });
      }
      const job = /^\/jobs\/([^/?]+)$/.exec(url);
      if (req.method === "DELETE" && job) return send(200, { id: decodeURIComponent(job[1] ?? ""), status: "stopped", lastCheckpoint: null });
      if (req.method === "GET" && job) return send(200, { id: decodeURIComponent(job[1] ?? ""), status: "running", routing: { modes: jobs.get(decodeURIComponent(job[1] ?? "")) ?? {} }, lastCheckpoint: { id: checkpoint, durationMs: 5, stateBytes: 100 } });
      return send(404, { error: `no route ${req.method} ${url}` });
    });
  });
  const listen = () =>
    new Promise<string>((resolve, reject) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address();
        if (address === null || typeof address === "string") reject(new Error("the fake runner has no TCP address"));
        else resolve(`http://127.0.0.1:${address.port}`);
      });
    });
  return {
    server,
    get modes() {
      return last;
    },
    calls,
    state,
    listen,
  };
}

/** A stateful rule (its velocity keeps per-card windows): source, keyBy, velocity at `threshold`, one Kafka sink. */
export function velocityRule(name: string, threshold: number): PipelineDocumentInput {
  const ids = ["payments", "byCard", "velocity", "alerts"] as const;
  const params = [{ topic: "payments", timestampField: "ts" }, { field: "cardId" }, { threshold, windowMs: "10m" }, { topic: "alerts" }];
  const types = ["source.kafka", "keyBy", "velocity", "sink.kafka"];
  return { format: PIPELINE_FORMAT, name, nodes: ids.map((id, i) => ({ id, type: types[i] ?? "", params: params[i] ?? {} })), edges: ids.slice(1).map((to, i) => ({ from: ids[i] ?? "", to })) };
}

/**
 * A describe block's server: an embedded PostgreSQL, a fake runner, and `as(email, role)` for the
 * API called as that person. Set up before the block's tests, closed after them.
 */
export function serverWithFakeRunner() {
  const runner = fakeRunner();
  const fixture = {
    db: undefined as unknown as Db,
    runner,
    runnerUrl: "",
    as: (email: string, role: "analyst" | "approver") => createCaller(createContext({ headers: new Headers() }, { ...asUser(email, role), db: async () => fixture.db, env: { runnerUrl: fixture.runnerUrl } })),
  };
  beforeAll(async () => {
    fixture.db = createDb({ dataDir: ":memory:" });
    await migrate(fixture.db);
    fixture.runnerUrl = await runner.listen();
  }, 60_000);
  afterAll(async () => {
    runner.server.close();
    await fixture.db?.close();
  });
  return fixture;
}
