// deployment.savepoint / restore / rescale / controls through the tRPC caller, on an in-memory
// PGlite and a fake runner speaking the runner's job-control API (POST /jobs with restoreFrom and
// parallelism, /savepoint, /stop?savepoint=true, /checkpoints). The real sequence against the real
// runner is in e2e/job-controls.e2e.test.ts; this covers the ordering, the steps recorded, the
// runner's refusal reaching the caller with the node, and the way back to the savepoint.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { asUser } from "../server/auth/test-user";
import { createCaller } from "../server/root";
import { createContext } from "../server/trpc";
import { fakeRunnerApi, type FakeRunnerApi } from "./fake-runner-api";
import { JobControlRegistry } from "./job-controls";

const doc = (name: string): PipelineDocumentInput => ({
  format: PIPELINE_FORMAT,
  name,
  settings: { checkpointIntervalMs: 2000, retainedCheckpoints: 3, maxParallelism: 8 },
  nodes: [
    { id: "payments", type: "source.demo", params: { eventsPerSecond: 200 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "vel", type: "velocity", params: { threshold: 3, windowMs: "1m", idField: "txId" } },
    { id: "alerts", type: "sink.file", params: { path: "out.jsonl" } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
  ],
});

interface Call {
  method: string;
  url: string;
  body: Record<string, unknown>;
}

describe("job controls", () => {
  let fake: FakeRunnerApi;
  let api: FakeRunnerApi["api"];
  const calls: Call[] = [];
  const running = new Set<string>();

  beforeAll(async () => {
    fake = await fakeRunnerApi((req, res) => {
      const json = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      let text = "";
      req.on("data", (c: Buffer) => (text += c.toString()));
      req.on("end", () => {
        const url = req.url ?? "";
        const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
        calls.push({ method: req.method ?? "", url, body });
        if (req.method === "POST" && url === "/jobs") {
          const id = String(body.deploymentId);
          // The runner's check of a restore: a folder whose state names a node the pipeline lacks.
          if (String(body.restoreFrom ?? "").includes("other-graph")) return json(400, { error: `the state in "${String(body.restoreFrom)}" does not fit the pipeline`, issues: ['node "risk" (velocity) has state in the savepoint but not in the pipeline; pass allowNonRestoredState to drop it'] });
          running.add(id);
          return json(201, { id, status: "starting" });
        }
        const m = /^\/jobs\/([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(url);
        const id = m?.[1] ?? "";
        if (!running.has(id)) return json(404, { error: `no job ${id}` });
        if (m?.[2] === "/checkpoints") return json(200, { jobId: id, checkpoints: [7, 6, 5].map((n) => ({ id: n, triggeredAt: n * 2000, completedAt: n * 2000 + 50, durationMs: 50, stateBytes: 100, path: `/cp/${id}/chk-${n}` })) });
        if (m?.[2] === "/savepoint") return json(200, { jobId: id, path: `/cp/savepoints/${id}/savepoint-1` });
        if (m?.[2] === "/stop" && m[3] === "?savepoint=true") {
          running.delete(id);
          return json(200, { id, status: "stopped", savepointPath: `/cp/savepoints/${id}/savepoint-final` });
        }
        return json(200, { id, status: "running", restarts: 0 });
      });
    }, { email: "analyst@bank.test", role: "analyst" });
    api = fake.api;
  }, 60_000);

  afterAll(() => fake?.close());

  const deploy = (name: string) => fake.deploy(doc(name));

  it("takes a savepoint and says where it is; the job keeps running", async () => {
    const d = await deploy("jc-savepoint");
    const result = await api.deployment.savepoint({ deploymentId: d.id });
    expect(result.path).toBe(`/cp/savepoints/${d.id}/savepoint-1`);
    const [run] = await api.deployment.controls({ pipelineId: d.pipelineId });
    expect(run).toMatchObject({ kind: "savepoint", status: "succeeded", result: `savepoint written: /cp/savepoints/${d.id}/savepoint-1` });
    expect(running.has(d.id)).toBe(true);
    const audit = await fake.db.prisma.auditEvent.findFirst({ where: { action: "savepoint", subjectId: d.id } });
    expect(audit?.details).toMatchObject({ path: `/cp/savepoints/${d.id}/savepoint-1` });
  });

  it("rescales: stops with a savepoint, then deploys from it at the new parallelism", async () => {
    const d = await deploy("jc-rescale");
    calls.length = 0;
    const result = await api.deployment.rescale({ deploymentId: d.id, parallelism: 2 });
    const savepoint = `/cp/savepoints/${d.id}/savepoint-final`;
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([`POST /jobs/${d.id}/stop?savepoint=true`, "POST /jobs"]);
    expect(calls[1]?.body).toMatchObject({ deploymentId: result.deployment.id, restoreFrom: savepoint, parallelism: 2 });
    const [run] = await api.deployment.controls({ pipelineId: d.pipelineId });
    expect(run?.steps.map((s) => s.message)).toEqual([
      `stopping deployment ${d.id} with a savepoint`,
      `savepoint written: ${savepoint}`,
      `job stopped (deployment ${d.id})`,
      "deploying v1 from the savepoint at parallelism 2",
      `restored at parallelism 2 from the savepoint: deployment ${result.deployment.id} is running`,
    ]);
    const { deployments } = await api.pipeline.get({ id: d.pipelineId });
    expect(deployments.map((x) => [x.id, x.status])).toEqual(expect.arrayContaining([[d.id, "stopped"], [result.deployment.id, "running"]]));
    // The new deployment reports the parallelism it runs at, not the version's.
    const cps = await api.deployment.checkpoints({ deploymentId: result.deployment.id });
    expect(cps.parallelism).toBe(2);
    expect(await fake.db.prisma.auditEvent.count({ where: { action: "rescale", subjectId: d.id } })).toBe(1);
  });

  it("restores from a listed checkpoint; only the kept ones that survive the stop are offered", async () => {
    const d = await deploy("jc-restore");
    const cps = await api.deployment.checkpoints({ deploymentId: d.id });
    expect(cps.checkpoints.map((c) => [c.id, c.restorable])).toEqual([
      [7, true],
      [6, true],
      [5, false],
    ]);
    calls.length = 0;
    const result = await api.deployment.restore({ deploymentId: d.id, from: { checkpointId: 6 } });
    expect(calls.at(-1)?.body).toMatchObject({ restoreFrom: `/cp/${d.id}/chk-6`, parallelism: 1 });
    expect(result.run.result).toBe(`restored at parallelism 1 from checkpoint 6: deployment ${result.deployment.id} is running`);
  });

  it("passes the runner's refusal on with the node, and goes back to running from the savepoint", async () => {
    const d = await deploy("jc-refused");
    // Another graph's savepoint: not the job's own, so the analyst is refused; an approver picks it explicitly (anotherJob).
    const from = { savepointPath: "/cp/other-graph/savepoint-9", anotherJob: true };
    await expect(api.deployment.restore({ deploymentId: d.id, from, parallelism: 2 })).rejects.toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("from another job's savepoint needs the approver role") });
    const approver = createCaller(createContext({ headers: new Headers() }, { ...asUser("pat@bank.test", "approver"), db: async () => fake.db, env: { runnerUrl: fake.runnerUrl } }));
    const error = await approver.deployment.restore({ deploymentId: d.id, from, parallelism: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCError);
    expect((error as TRPCError).code).toBe("BAD_REQUEST");
    expect((error as TRPCError).message).toMatch(/node "risk" \(velocity\) has state in the savepoint/);
    const [run] = await api.deployment.controls({ pipelineId: d.pipelineId });
    expect(run).toMatchObject({ kind: "restore", status: "failed", issues: [expect.stringMatching(/node "risk"/)] });
    expect(run?.steps.map((s) => s.message)).toContain("going back: deploying from the savepoint at parallelism 1");
    const back = run?.newDeploymentId ?? "";
    expect(running.has(back)).toBe(true);
    expect(calls.at(-1)?.body).toMatchObject({ deploymentId: back, restoreFrom: `/cp/savepoints/${d.id}/savepoint-final`, parallelism: 1 });
    const audit = await fake.db.prisma.auditEvent.findFirst({ where: { action: "restore", subjectId: d.id } });
    expect(audit?.details).toMatchObject({ status: "failed", newDeploymentId: back });
  });

  it("refuses a parallelism above maxParallelism before touching the job", async () => {
    const d = await deploy("jc-too-wide");
    calls.length = 0;
    const error = await api.deployment.rescale({ deploymentId: d.id, parallelism: 9 }).catch((e: unknown) => e);
    expect((error as TRPCError).message).toMatch(/above the pipeline's maxParallelism 8/);
    expect(calls).toEqual([]);
  });

  it("runs one control at a time per pipeline", () => {
    const registry = new JobControlRegistry(() => 0);
    registry.start("p", "rescale", "d1");
    expect(() => registry.start("p", "savepoint", "d1")).toThrow(/a rescale of this pipeline is still running/);
    expect(() => registry.start("q", "savepoint", "d2")).not.toThrow();
  });
});
