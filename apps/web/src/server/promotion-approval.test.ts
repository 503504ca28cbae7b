// The approver's bundle on the server (issue 7), against a real (embedded) PostgreSQL and a fake
// runner over HTTP that keeps a rule job's routing: an approval is refused while the version's state
// does not fit the rule job's newest checkpoint (the message names the version's node, as the
// runner's check does), and recorded with its state check once it fits; the promoting approver's
// choice for the version that enforced ("stopped") goes to the runner's switch and to the audit, on
// a promotion and on a rollback. Then four-eyes with no holes (issue 35): each attack tried and refused.
import { describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { serverWithFakeRunner, velocityRule as doc } from "./fake-runner.testing";

describe("the approver's bundle on the server", () => {
  const server = serverWithFakeRunner();
  const { runner, as } = server;

  it("refuses an approval whose state does not fit the rule job's checkpoint, approves it once it fits, and stops the version that enforced when the approver chooses so, on promotion and on rollback", async () => {
    const db = server.db;
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

/** One source and one file sink: the enforcement output is a file. */
function fileDoc(name: string): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
      { id: "alerts", type: "sink.file", params: { path: "out/enforced.jsonl" } },
    ],
    edges: [{ from: "payments", to: "alerts" }],
  };
}

// Four-eyes with no holes (issue 35, point 4): each attack tried and refused.
describe("four-eyes with no holes", () => {
  const server = serverWithFakeRunner();
  const { runner, as } = server;
  const ana = () => as("ana@example.test", "analyst");
  const pat = () => as("pat@example.test", "approver");
  const sam = () => as("sam@example.test", "approver");
  const submitted = () => runner.calls.filter((c) => c.method === "POST" && c.url === "/jobs").map((c) => (c.body as { pipeline: { settings: { deadLetterTopic?: string }; nodes: { id: string; type: string; params: Record<string, unknown> }[] } }).pipeline);

  it("an approver's test deployment of an unapproved version writes only shadow outputs (Kafka topic, dead letters and file), never the enforcement ones", async () => {
    const { id } = await ana().pipeline.create({ name: "unreviewed", graph: doc("unreviewed", 3) });
    const v1 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc("unreviewed", 3), message: "v1" })).version;
    await pat().deployment.deploy({ versionId: v1.id, mode: "test", reason: "just a test" });
    const kafka = submitted().at(-1);
    expect(kafka?.nodes.find((n) => n.id === "alerts")?.params.topic).toBe("unreviewed.shadow");
    expect(kafka?.settings.deadLetterTopic).toBe("unreviewed.dlq.shadow");

    const file = await ana().pipeline.create({ name: "unreviewed-file", graph: fileDoc("unreviewed-file") });
    const f1 = (await ana().pipeline.saveVersion({ pipelineId: file.id, graph: fileDoc("unreviewed-file"), message: "v1" })).version;
    await pat().deployment.deploy({ versionId: f1.id, mode: "test" });
    expect(submitted().at(-1)?.nodes.find((n) => n.id === "alerts")?.params.path).toBe("out/unreviewed-file.shadow.v1.alerts.jsonl");

    // Once another approver approved its exact graph, a test deployment writes the version's own outputs.
    await sam().promotion.approve({ requestId: (await ana().promotion.request({ versionId: f1.id, reason: "reviewed by a second pair of eyes" })).id, comment: "ok" });
    await pat().deployment.deploy({ versionId: f1.id, mode: "test" });
    expect(submitted().at(-1)?.nodes.find((n) => n.id === "alerts")?.params.path).toBe("out/enforced.jsonl");
  });

  it("refuses an approver approving a version they authored, though an analyst asked for the promotion", async () => {
    const { id } = await pat().pipeline.create({ name: "own-work", graph: doc("own-work", 3) });
    const v1 = (await pat().pipeline.saveVersion({ pipelineId: id, graph: doc("own-work", 3), message: "pat's rule" })).version;
    const asked = await ana().promotion.request({ versionId: v1.id, reason: "pat asked me to click request" });
    await expect(pat().promotion.approve({ requestId: asked.id, comment: "lgtm" })).rejects.toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("pat@example.test authored version 1") });
    expect((await pat().promotion.list({ pipelineId: id }))[0]?.status).toBe("pending");
    // Another approver may.
    expect((await sam().promotion.approve({ requestId: asked.id, comment: "reviewed" })).status).toBe("approved");
  });

  it("refuses an approver approving a promotion they requested", async () => {
    const { id } = await ana().pipeline.create({ name: "own-request", graph: doc("own-request", 3) });
    const v1 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc("own-request", 3), message: "v1" })).version;
    const asked = await pat().promotion.request({ versionId: v1.id, reason: "I would like this one enforced" });
    await expect(pat().promotion.approve({ requestId: asked.id, comment: "self-service" })).rejects.toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("pat@example.test asked for this promotion") });
  });

  it("uses an approval up with the one enforcing deploy it allows: a second enforcing deploy needs a new approval", async () => {
    const { id } = await ana().pipeline.create({ name: "once", graph: doc("once", 3) });
    const v1 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc("once", 3), message: "v1" })).version;
    const first = await ana().promotion.request({ versionId: v1.id, reason: "the first version of this rule" });
    await pat().promotion.approve({ requestId: first.id, comment: "ok" });
    const enforcing = await pat().deployment.deploy({ versionId: v1.id, mode: "enforcing", reason: "v1 enforces" });
    // Enforcement stops (said in words, with a reason); enforcing v1 again with the same approval is refused.
    await pat().deployment.stop({ deploymentId: enforcing.id, enforcementStops: true, reason: "the rule is retired for now" });
    await expect(pat().deployment.deploy({ versionId: v1.id, mode: "enforcing", reason: "again" })).rejects.toMatchObject({
      code: "PRECONDITION_FAILED",
      message: expect.stringContaining(`the approval ${first.id} of version 1 was used by deployment ${enforcing.id}`),
    });
    expect(await server.db.prisma.deployment.count({ where: { pipelineId: id, mode: "enforcing", status: "running" } })).toBe(0);
    const used = await server.db.prisma.promotionRequest.findUniqueOrThrow({ where: { id: first.id } });
    expect(used.usedByDeploymentId).toBe(enforcing.id);
    expect(used.usedAt).toBeInstanceOf(Date);
    // A new request, approved by another approver, allows one more.
    const second = await ana().promotion.request({ versionId: v1.id, reason: "back in service" });
    await sam().promotion.approve({ requestId: second.id, comment: "ok" });
    expect((await pat().deployment.deploy({ versionId: v1.id, mode: "enforcing", reason: "v1 enforces again" })).mode).toBe("enforcing");
  });
});
