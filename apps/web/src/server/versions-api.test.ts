// Templates, import and dry run through the tRPC API (PGlite in memory; a stand-in runner on a
// local port answers POST /dry-run). The templates are also checked with the runner's own CLI.
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { createDb, migrate, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, validatePipeline, type PipelineDocumentInput } from "@keyflow/operators";
import { createCaller } from "./root";
import type { DryRunResult } from "./runner-client";
import { loadTemplates, templatesDir, titleOf } from "./services/templates";
import { createContext } from "./trpc";
import { asUser } from "./auth/test-user";

const REPO = path.resolve(import.meta.dirname, "..", "..", "..", "..");
const TEMPLATES = path.join(REPO, "examples", "templates");

async function rejection(promise: Promise<unknown>): Promise<TRPCError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof TRPCError)) throw new Error(`expected a TRPCError, got ${String(error)}`);
  return error;
}

const SEED_PATTERNS = ["broadcast-enrichment", "daily-limit", "dedup", "login-timeout", "structuring", "temporal-enrichment", "velocity-check"];

describe("templates", () => {
  it("has one valid template per seed pattern, without warnings", () => {
    const templates = loadTemplates(TEMPLATES);
    expect(templates.map((t) => t.id).sort()).toEqual(SEED_PATTERNS);
    for (const t of templates) {
      const result = validatePipeline(t.graph);
      expect({ id: t.id, issues: result.issues.map((i) => i.message) }).toEqual({ id: t.id, issues: [] });
      expect(t.graph.name).toBe(t.id);
      expect(t.description.length).toBeGreaterThan(40);
      // every node placed, so the canvas opens them as drawn
      expect(t.graph.nodes.every((n) => n.position !== undefined)).toBe(true);
    }
    expect(titleOf("velocity-check")).toBe("Velocity check");
  });

  it("passes `keyflow validate` (the runner's CLI)", async () => {
    const run = promisify(execFile);
    for (const id of SEED_PATTERNS) {
      const file = path.join(TEMPLATES, `${id}.json`);
      const { stdout } = await run(process.execPath, [path.join(REPO, "apps/runner/bin/keyflow.mjs"), "validate", file], { cwd: REPO });
      expect(stdout).toMatch(/is valid/);
    }
  }, 120_000);

  it("finds the folder from the repository root or from apps/web", () => {
    expect(templatesDir({}, REPO)).toBe(TEMPLATES);
    expect(templatesDir({}, path.join(REPO, "apps", "web"))).toBe(TEMPLATES);
    expect(templatesDir({ KEYFLOW_TEMPLATES_DIR: "/somewhere" }, REPO)).toBe("/somewhere");
  });
});

function doc(name: string, threshold = 5): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "vel", type: "velocity", params: { threshold, windowMs: "2m" } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "alerts" },
    ],
  };
}

const cannedResult: DryRunResult = {
  pipeline: "dry",
  durationMs: 3,
  inputs: { payments: { records: 2, label: "sample" } },
  nodes: { payments: { type: "source.kafka", recordsIn: 2, recordsOut: 2, late: 0, deadLetters: 0, keys: 0, ports: { out: { count: 2, records: [] } } } },
  alerts: { count: 0, items: [] },
  deadLetters: { count: 0, items: [] },
  warnings: [],
};

describe("tRPC: templates, import, dry run", () => {
  let db: Db;
  let api: ReturnType<typeof createCaller>;
  let runner: http.Server;
  const received: unknown[] = [];
  let answer: { status: number; body: unknown } = { status: 200, body: cannedResult };

  beforeAll(async () => {
    runner = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        received.push({ method: req.method, url: req.url, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown });
        res.writeHead(answer.status, { "content-type": "application/json" });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => runner.listen(0, "127.0.0.1", resolve));
    const runnerUrl = `http://127.0.0.1:${(runner.address() as AddressInfo).port}`;
    db = createDb({ dataDir: ":memory:" });
    await migrate(db);
    api = createCaller(createContext({ headers: new Headers() }, { ...asUser("bob"), db: async () => db, env: { runnerUrl } }));
  }, 60_000);

  afterAll(async () => {
    await db?.close();
    await new Promise((resolve) => runner?.close(resolve));
  });

  it("lists the templates", async () => {
    const list = await api.templates.list();
    expect(list.map((t) => t.id)).toEqual(expect.arrayContaining(SEED_PATTERNS));
    expect(list.find((t) => t.id === "velocity-check")).toMatchObject({ title: "Velocity check", operators: ["source.kafka", "keyBy", "velocity", "sink.kafka"] });
  });

  it("imports a file as a new pipeline's draft, with the validator's issues", async () => {
    const broken = { ...doc("imported-one"), edges: [{ from: "payments", to: "byCard" }] };
    const r = await api.pipeline.importDraft({ graph: broken });
    if (!r.ok) throw new Error("expected the import to be stored");
    expect(r.created).toBe(true);
    expect(r.issues.some((i) => i.severity === "error" && i.nodeId === "vel")).toBe(true);
    const got = await api.pipeline.get({ id: r.pipelineId });
    expect(got.name).toBe("imported-one");
    expect(got.draft.nodes.map((n) => n.id)).toEqual(["payments", "byCard", "vel", "alerts"]);
    expect(got.versions).toEqual([]);

    // again, into the same pipeline: the draft is replaced, the document renamed to the pipeline
    const again = await api.pipeline.importDraft({ graph: doc("some-other-name", 9), into: r.pipelineId });
    expect(again).toMatchObject({ ok: true, created: false, name: "imported-one" });
    expect(again.issues.filter((i) => i.severity === "error")).toEqual([]);
    const after = await api.pipeline.get({ id: r.pipelineId });
    expect(after.draft.name).toBe("imported-one");
    expect(after.draft.nodes.find((n) => n.id === "vel")?.params).toEqual({ threshold: 9, windowMs: "2m" });

    // under another name, and a name already taken
    const renamed = await api.pipeline.importDraft({ graph: doc("imported-one"), name: "imported-two" });
    expect(renamed).toMatchObject({ ok: true, created: true, name: "imported-two" });
    expect((await rejection(api.pipeline.importDraft({ graph: doc("imported-one") }))).code).toBe("CONFLICT");
  });

  it("stores nothing for a file that is not a pipeline document, and says why", async () => {
    const r = await api.pipeline.importDraft({ graph: { hello: "world" } });
    expect(r.ok).toBe(false);
    expect(r.issues[0]?.message).toMatch(/"format" must be "keyflow.pipeline\/v1"/);
  });

  it("dry-runs a draft on the runner and returns its answer", async () => {
    received.length = 0;
    answer = { status: 200, body: cannedResult };
    const result = await api.pipeline.dryRun({ graph: doc("dry"), sample: { kind: "lines", lines: ['{"ts":1}', '{"ts":2}'] } });
    expect(result).toEqual(cannedResult);
    expect(received).toEqual([{ method: "POST", url: "/dry-run", body: { pipeline: expect.objectContaining({ name: "dry" }), records: ['{"ts":1}', '{"ts":2}'] } }]);

    received.length = 0;
    await api.pipeline.dryRun({ graph: doc("dry"), sample: { kind: "topic", lastN: 50 }, sourceNodeId: "payments" });
    expect(received).toEqual([{ method: "POST", url: "/dry-run", body: expect.objectContaining({ records: { lastN: 50 }, sourceNodeId: "payments" }) }]);
  });

  it("refuses a draft with errors before asking the runner, and passes the runner's refusals on", async () => {
    received.length = 0;
    const invalid = await rejection(api.pipeline.dryRun({ graph: doc("dry", 0), sample: { kind: "lines", lines: ["{}"] } }));
    expect(invalid.code).toBe("UNPROCESSABLE_CONTENT");
    expect(received).toEqual([]);

    answer = { status: 400, body: { error: "the pipeline is invalid", issues: ['node "vel": boom'] } };
    const refused = await rejection(api.pipeline.dryRun({ graph: doc("dry"), sample: { kind: "lines", lines: ["{}"] } }));
    expect(refused.code).toBe("BAD_REQUEST");
    expect(refused.message).toBe('the pipeline is invalid: node "vel": boom');

    answer = { status: 502, body: { error: "cannot read the last 5 records" } };
    const failed = await rejection(api.pipeline.dryRun({ graph: doc("dry"), sample: { kind: "topic", lastN: 5 } }));
    expect(failed.code).toBe("BAD_GATEWAY");
    expect(failed.message).toMatch(/cannot read the last 5 records/);
  });

  it("says when the runner is not there", async () => {
    const offline = createCaller(createContext({ headers: new Headers() }, { ...asUser("tester"), db: async () => db, env: { runnerUrl: "http://127.0.0.1:9" } }));
    const error = await rejection(offline.pipeline.dryRun({ graph: doc("dry"), sample: { kind: "lines", lines: ["{}"] } }));
    expect(error.code).toBe("BAD_GATEWAY");
    expect(error.message).toMatch(/did not answer/);
  });

  it("keeps the committed templates folder free of stray files", () => {
    expect(fs.readdirSync(TEMPLATES).every((f) => f.endsWith(".json"))).toBe(true);
  });
});
