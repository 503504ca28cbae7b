// The tRPC API against a real (embedded, in-memory) PostgreSQL: PGlite with the committed
// migrations. No server, no HTTP: procedures are called through createCaller.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import superjson from "superjson";
import { createDb, migrate, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { graphHash } from "./canonical-json";
import { PipelineRejectedError } from "./errors";
import { appRouter, createCaller } from "./root";
import { createContext } from "./trpc";
import { asUser } from "./auth/test-user";

function doc(name: string, expression = 'amount > 50000 && country != "SA"'): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
      { id: "large", type: "filter", params: { expression } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" } },
    ],
    edges: [
      { from: "payments", to: "large" },
      { from: "large", to: "alerts" },
    ],
  };
}

async function rejection(promise: Promise<unknown>): Promise<TRPCError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TRPCError)) throw new Error(`expected a TRPCError, got ${String(error)}`);
  return error;
}

describe("tRPC API", () => {
  let db: Db;
  let api: ReturnType<typeof createCaller>;

  beforeAll(async () => {
    db = createDb({ dataDir: ":memory:" });
    await migrate(db);
    api = createCaller(createContext({ headers: new Headers() }, { ...asUser("alice"), db: async () => db, env: { runnerUrl: "http://127.0.0.1:9" } }));
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it("creates, lists and gets a pipeline; its draft starts empty", async () => {
    const created = await api.pipeline.create({ name: "empty-one", description: "nothing yet" });
    const list = await api.pipeline.list();
    expect(list.find((p) => p.id === created.id)).toMatchObject({ name: "empty-one", description: "nothing yet", versionCount: 0, latestVersion: null });
    const got = await api.pipeline.get({ id: created.id });
    expect(got.draft).toMatchObject({ format: PIPELINE_FORMAT, name: "empty-one", nodes: [], edges: [] });
    expect(got.versions).toEqual([]);
  });

  it("refuses a second pipeline with the same name", async () => {
    await api.pipeline.create({ name: "twice" });
    const error = await rejection(api.pipeline.create({ name: "twice" }));
    expect(error.code).toBe("CONFLICT");
  });

  it("numbers versions 1, 2, … with the author, message and the hash of the canonical graph", async () => {
    const { id } = await api.pipeline.create({ name: "numbered", graph: doc("numbered") });
    const [a, b] = await Promise.all([
      api.pipeline.saveVersion({ pipelineId: id, graph: doc("numbered"), message: "first" }),
      api.pipeline.saveVersion({ pipelineId: id, graph: doc("numbered", "amount > 10"), message: "second" }),
    ]);
    expect([a.version.number, b.version.number].sort()).toEqual([1, 2]);
    const got = await api.pipeline.get({ id });
    expect(got.versions.map((v) => v.number)).toEqual([2, 1]);
    for (const version of got.versions) {
      expect(version.author).toBe("alice");
      expect(version.graphHash).toBe(graphHash(version.graph));
    }
    expect((await api.pipeline.list()).find((p) => p.id === id)).toMatchObject({ versionCount: 2, latestVersion: { number: 2 } });
  });

  it("refuses an invalid graph with the validator's issues, naming the node", async () => {
    const { id } = await api.pipeline.create({ name: "broken" });
    const error = await rejection(api.pipeline.saveVersion({ pipelineId: id, graph: doc("broken", "amount >"), message: "nope" }));
    expect(error.code).toBe("UNPROCESSABLE_CONTENT");
    expect(error.cause).toBeInstanceOf(PipelineRejectedError);
    const issues = error.cause instanceof PipelineRejectedError ? error.cause.issues : [];
    expect(issues.some((issue) => issue.severity === "error" && issue.nodeId === "large")).toBe(true);
    expect((await api.pipeline.get({ id })).versions).toEqual([]);
  });

  it("sends the validator's issues to HTTP clients in error.data.pipelineIssues", async () => {
    const { id } = await api.pipeline.create({ name: "over-http" });
    const req = new Request("http://web.test/api/trpc/pipeline.saveVersion", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(superjson.serialize({ pipelineId: id, graph: doc("over-http", "amount >"), message: "" })),
    });
    const res = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router: appRouter,
      createContext: () => createContext({ headers: req.headers }, { ...asUser("tester"), db: async () => db }),
    });
    expect(res.status).toBe(422);
    const body: unknown = await res.json();
    expect(body).toMatchObject({
      error: { json: { data: { code: "UNPROCESSABLE_CONTENT", inputIssues: null, pipelineIssues: expect.arrayContaining([expect.objectContaining({ severity: "error", nodeId: "large" })]) } } },
    });
  });

  it("sends zod's input issues with their paths", async () => {
    const req = new Request("http://web.test/api/trpc/pipeline.create", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(superjson.serialize({ name: "has spaces" })),
    });
    const res = await fetchRequestHandler({ endpoint: "/api/trpc", req, router: appRouter, createContext: () => createContext({ headers: req.headers }, { ...asUser("tester"), db: async () => db }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { json: { data: { code: "BAD_REQUEST", inputIssues: [expect.objectContaining({ path: "name" })], pipelineIssues: null } } } });
  });

  it("refuses a graph whose name is not the pipeline's", async () => {
    const { id } = await api.pipeline.create({ name: "named" });
    const error = await rejection(api.pipeline.saveVersion({ pipelineId: id, graph: doc("other"), message: "" }));
    expect(error.code).toBe("BAD_REQUEST");
    expect(error.message).toContain('"other"');
  });

  it("autosaves any well-formed draft, valid or not", async () => {
    const { id } = await api.pipeline.create({ name: "drafty" });
    await api.pipeline.saveDraft({ pipelineId: id, graph: doc("drafty", "amount >") });
    expect((await api.pipeline.get({ id })).draft.nodes).toHaveLength(3);
  });

  it("refuses a draft with a 5 MB paste in an expression, naming the param; the stored draft is unchanged", async () => {
    const { id } = await api.pipeline.create({ name: "pasted" });
    await api.pipeline.saveDraft({ pipelineId: id, graph: doc("pasted") });
    const error = await rejection(api.pipeline.saveDraft({ pipelineId: id, graph: doc("pasted", "x".repeat(5 * 1024 * 1024)) }));
    expect(error.code).toBe("BAD_REQUEST");
    expect(error.message).toContain('node \\"large\\": param \\"expression\\" is 5242880 characters long, over the limit of 200000');
    expect((await api.pipeline.get({ id })).draft.nodes.find((n) => n.id === "large")?.params).toEqual({ expression: 'amount > 50000 && country != "SA"' });
    // Over an expression's own limit: the validator names node and param.
    const long = await api.pipeline.validate({ graph: doc("v", `amount > ${"1".repeat(10_000)}`) });
    expect(long.issues.map((i) => i.message)).toContainEqual(expect.stringMatching(/node "large".*expression.*over the limit of 10000/));
  });

  it("validates without storing", async () => {
    expect((await api.pipeline.validate({ graph: doc("v") })).ok).toBe(true);
    const bad = await api.pipeline.validate({ graph: doc("v", "amount >") });
    expect(bad.ok).toBe(false);
    expect(bad.issues[0]?.message).toContain('node "large"');
  });

  it("deploys a version: records the deployment and hands the pipeline to the runner", async () => {
    const received: unknown[] = [];
    const runner = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        received.push({ method: req.method, url: req.url, body: JSON.parse(body) as unknown });
        const jobId = (JSON.parse(body) as { jobId?: string }).jobId ?? "job-1";
        res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id: jobId, status: "starting", routing: { modes: { "1": "shadow" } } }));
      });
    });
    await new Promise<void>((resolve) => runner.listen(0, "127.0.0.1", resolve));
    try {
      const address = runner.address();
      if (address === null || typeof address === "string") throw new Error("the fake runner has no TCP address");
      const runnerUrl = `http://127.0.0.1:${address.port}`;
      const deployer = createCaller(createContext({ headers: new Headers() }, { ...asUser("tester"), db: async () => db, env: { runnerUrl } }));
      const { id } = await api.pipeline.create({ name: "deployed", graph: doc("deployed") });
      const { version } = await api.pipeline.saveVersion({ pipelineId: id, graph: doc("deployed"), message: "go" });
      const deployment = await deployer.deployment.deploy({ versionId: version.id, mode: "shadow" });
      // The rule's first live version starts its rule job, with the version as a shadow branch: the
      // runner routes that branch's alerts to deployed.shadow (apps/runner/src/job/routing.ts).
      expect(deployment).toMatchObject({ versionId: version.id, pipelineId: id, status: "running", runnerJobId: `rule-${deployment.id}` });
      expect(received).toEqual([
        {
          method: "POST",
          url: "/rule-jobs",
          body: { jobId: `rule-${deployment.id}`, rule: { name: "deployed", branches: [{ version: 1, mode: "shadow", pipeline: expect.objectContaining({ name: "deployed", format: PIPELINE_FORMAT }) }] } },
        },
      ]);
    } finally {
      runner.close();
    }
  });

  it("records a failed deployment when the runner does not answer", async () => {
    const { id } = await api.pipeline.create({ name: "deploy-me", graph: doc("deploy-me") });
    const { version } = await api.pipeline.saveVersion({ pipelineId: id, graph: doc("deploy-me"), message: "" });
    const error = await rejection(api.deployment.deploy({ versionId: version.id }));
    expect(error.code).toBe("BAD_GATEWAY");
    const { deployments } = await api.pipeline.get({ id });
    expect(deployments).toHaveLength(1);
    expect(deployments[0]).toMatchObject({ versionId: version.id, status: "failed", mode: "shadow", runnerJobId: null });
    expect(deployments[0]?.failureReason).toContain("did not answer");
  });

  it("lists the catalog as plain JSON with each operator's params as JSON Schema", async () => {
    const operators = await api.catalog.list();
    expect(operators.length).toBeGreaterThan(0);
    const filter = operators.find((op) => op.type === "filter");
    expect(filter).toMatchObject({ category: "transform", inputs: [{ id: "in" }] });
    expect(filter?.outputs.map((p) => p.id)).toContain("errors");
    expect(filter?.paramsSchema).toMatchObject({ type: "object", properties: { expression: { type: "string" } } });
    expect(JSON.parse(JSON.stringify(operators))).toEqual(operators);
  });
});
