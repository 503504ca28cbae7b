// The approver's bundle on the server (issue 7), against a real (embedded) PostgreSQL and a fake
// runner over HTTP that keeps a rule job's routing: an approval is refused while the version's state
// does not fit the rule job's newest checkpoint (the message names the version's node, as the
// runner's check does), and recorded with its state check once it fits; the promoting approver's
// choice for the version that enforced ("stopped") goes to the runner's switch and to the audit, on
// a promotion and on a rollback.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { createCaller } from "./root";
import { createContext } from "./trpc";
import { asUser } from "./auth/test-user";

/** A stateful rule (its velocity keeps per-card windows, the state the check is about). */
function doc(name: string, threshold: number): PipelineDocumentInput {
  const ids = ["payments", "byCard", "velocity", "alerts"] as const;
  const params = [{ topic: "payments", timestampField: "ts" }, { field: "cardId" }, { threshold, windowMs: "10m" }, { topic: "alerts" }];
  const types = ["source.kafka", "keyBy", "velocity", "sink.kafka"];
  return { format: PIPELINE_FORMAT, name, nodes: ids.map((id, i) => ({ id, type: types[i] ?? "", params: params[i] ?? {} })), edges: ids.slice(1).map((to, i) => ({ from: ids[i] ?? "", to })) };
}

/** A runner with one rule job: its branches' modes, a check answer the test sets, and the calls it got. */
function fakeRunner() {
  const modes: Record<string, string> = {};
  const calls: { method: string; url: string; body: unknown }[] = [];
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
        for (const b of rule.branches) modes[String(b.version)] = b.mode;
        return send(201, { id: body?.jobId, status: "running", routing: { modes } });
      }
      if (req.method === "POST" && url === "/rule-jobs/check") {
        return send(200, { checkpoint: `/data/checkpoints/${String(body?.jobId)}/chk-${checkpoint}`, ...state.check, dropped: [] });
      }
      const routing = /^\/jobs\/([^/]+)\/routing$/.exec(url);
      if (req.method === "POST" && routing) {
        const before = { ...modes };
        Object.assign(modes, (body as { modes: Record<string, string> }).modes);
        checkpoint += 1;
        const at = new Date().toISOString();
        return send(200, { checkpointId: checkpoint, sources: { payments: { "0": 42 } }, before, after: { ...modes }, requestedAt: at, completedAt: at });
      }
      if (req.method === "POST" && /^\/jobs\/[^/]+\/stop/.test(url)) return send(200, { savepointPath: "/data/savepoints/sp-1" });
      const job = /^\/jobs\/([^/?]+)$/.exec(url);
      if (req.method === "GET" && job) return send(200, { id: decodeURIComponent(job[1] ?? ""), status: "running", routing: { modes }, lastCheckpoint: { id: checkpoint } });
      return send(404, { error: `no route ${req.method} ${url}` });
    });
  });
  return { server, modes, calls, state };
}

describe("the approver's bundle on the server", () => {
  let db: Db;
  const runner = fakeRunner();
  let runnerUrl = "";

  beforeAll(async () => {
    db = createDb({ dataDir: ":memory:" });
    await migrate(db);
    await new Promise<void>((resolve) => runner.server.listen(0, "127.0.0.1", resolve));
    const address = runner.server.address();
    if (address === null || typeof address === "string") throw new Error("the fake runner has no TCP address");
    runnerUrl = `http://127.0.0.1:${address.port}`;
  }, 60_000);

  afterAll(async () => {
    runner.server.close();
    await db?.close();
  });

  it("refuses an approval whose state does not fit the rule job's checkpoint, approves it once it fits, and stops the version that enforced when the approver chooses so, on promotion and on rollback", async () => {
    const as = (email: string, role: "analyst" | "approver") => createCaller(createContext({ headers: new Headers() }, { ...asUser(email, role), db: async () => db, env: { runnerUrl } }));
    const ana = as("ana@example.test", "analyst");
    const pat = as("pat@example.test", "approver");
    const { id } = await ana.pipeline.create({ name: "bundle", graph: doc("bundle", 100) });
    const v1 = (await ana.pipeline.saveVersion({ pipelineId: id, graph: doc("bundle", 100), message: "v1" })).version;
    await pat.promotion.approve({ requestId: (await ana.promotion.request({ versionId: v1.id, reason: "the first version of this rule" })).id, comment: "ok" });
    const enforcing1 = await pat.deployment.deploy({ versionId: v1.id, mode: "enforcing", reason: "v1 enforces" });
    const v2 = (await ana.pipeline.saveVersion({ pipelineId: id, graph: doc("bundle", 50), message: "v2" })).version;
    const shadow2 = await ana.deployment.deploy({ versionId: v2.id, mode: "shadow" });
    expect(shadow2.runnerJobId).toBe(enforcing1.runnerJobId);
    expect(runner.modes).toEqual({ "1": "enforcing", "2": "shadow" });

    const asked = await ana.promotion.request({ versionId: v2.id, reason: "catches more of the bursts" });
    const problem = 'version 2, node "velocity" (velocity): its state in the checkpoint was written by operator version 1, this runner has version 2';
    runner.state.check = { compatible: false, problems: [problem] };
    const compat = await pat.promotion.compat({ versionId: v2.id });
    expect(compat).toMatchObject({ ruleJobId: enforcing1.runnerJobId, compatible: false, problems: [problem] });
    await expect(pat.promotion.approve({ requestId: asked.id, comment: "looks good" })).rejects.toMatchObject({
      code: "PRECONDITION_FAILED",
      message: expect.stringContaining(`version 2's state does not fit the newest checkpoint of rule job ${enforcing1.runnerJobId} (/data/checkpoints/${enforcing1.runnerJobId}/chk-0), so it cannot be approved: ${problem}`),
    });
    expect((await pat.promotion.list({ pipelineId: id })).find((r) => r.id === asked.id)?.status).toBe("pending");

    runner.state.check = { compatible: true, problems: [] };
    expect((await pat.promotion.approve({ requestId: asked.id, comment: "looks good" })).status).toBe("approved");
    const approval = (await pat.audit.list({ action: "approve", pipelineId: id })).events.find((e) => e.subjectId === asked.id);
    expect(approval?.details).toMatchObject({ stateCheck: { ruleJobId: enforcing1.runnerJobId, compatible: true, dropped: [] } });

    // The approver chooses that v1 stops (rather than dropping back to shadow) at the switch.
    const promoted = await pat.deployment.deploy({ versionId: v2.id, mode: "enforcing", reason: `promotion ${asked.id}`, previous: "stopped" });
    expect(runner.calls.filter((c) => c.url.endsWith("/routing")).at(-1)?.body).toEqual({ modes: { "2": "enforcing", "1": "stopped" } });
    expect(runner.modes).toEqual({ "1": "stopped", "2": "enforcing" });
    const promote = (await pat.audit.list({ action: "promote", pipelineId: id })).events.find((e) => e.subjectId === promoted.id);
    expect(promote?.details).toMatchObject({ previous: "stopped", switch: { before: { "1": "enforcing", "2": "shadow" }, after: { "1": "stopped", "2": "enforcing" } } });
    const status = await pat.promotion.status({ pipelineId: id });
    expect(status.enforcing.map((d) => d.number)).toEqual([2]);
    const live = await db.prisma.deployment.findMany({ where: { pipelineId: id, status: "running" }, select: { version: { select: { number: true } }, mode: true } });
    expect(live).toEqual([{ version: { number: 2 }, mode: "enforcing" }]);

    // Rolled back (approved for v1's graph again) with the choice that v2 stops too: v1's stopped branch enforces again.
    const back = await ana.promotion.request({ versionId: v1.id, reason: "v2 blocks good customers" });
    await pat.promotion.approve({ requestId: back.id, comment: "back to v1" });
    // v1's stopped branch is checked as a branch again (its state is in the checkpoint), so nothing is dropped.
    const checked = runner.calls.filter((c) => c.url === "/rule-jobs/check").at(-1)?.body as { rule: { branches: { version: number; mode: string }[] }; allowNonRestoredState?: boolean };
    expect(checked.rule.branches.map((b) => [b.version, b.mode])).toEqual([[2, "enforcing"], [1, "shadow"]]);
    expect(checked.allowNonRestoredState).toBeUndefined();
    const rolled = await pat.promotion.rollback({ pipelineId: id, reason: "approved rollback to v1", current: "stopped" });
    expect(runner.calls.filter((c) => c.url.endsWith("/routing")).at(-1)?.body).toEqual({ modes: { "1": "enforcing", "2": "stopped" } });
    expect(runner.modes).toEqual({ "1": "enforcing", "2": "stopped" });
    const rollback = (await pat.audit.list({ action: "rollback", pipelineId: id })).events.find((e) => e.subjectId === rolled.deployment.id);
    expect(rollback?.details).toMatchObject({ current: "stopped", promotionId: back.id, switch: { after: { "1": "enforcing", "2": "stopped" } } });
  });
});
