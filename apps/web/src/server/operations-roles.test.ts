// The role matrix for operating rules (issue 35, point 3), against a real (embedded) PostgreSQL and a
// fake runner over HTTP: on a rule job with an enforcing branch, an analyst's stop, throttle,
// restore, rescale and routing change are refused with FORBIDDEN naming the role; an approver's are
// done and audited (throttle included); stopping the enforcing version needs a successor or words
// and a reason; a restore comes from the job's own checkpoints and savepoints unless an approver
// explicitly picks another; an analyst still operates a rule with no enforcing branch.
import { describe, expect, it } from "vitest";
import { serverWithFakeRunner, velocityRule as doc } from "./fake-runner.testing";

describe("the role matrix for operating a rule job with an enforcing branch", () => {
  const server = serverWithFakeRunner();
  const { runner, as } = server;
  const ana = () => as("ana@example.test", "analyst");
  const pat = () => as("pat@example.test", "approver");
  const sam = () => as("sam@example.test", "approver");
  const forbidden = (action: string) => ({ code: "FORBIDDEN", message: expect.stringMatching(new RegExp(`${action} needs the approver role: .*enforc.*ana@example\\.test is an analyst`)) });
  /** A rule with v1 enforcing and v2 in shadow, branches of one rule job. */
  async function enforcingRule(name: string) {
    const { id } = await ana().pipeline.create({ name, graph: doc(name, 3) });
    const v1 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc(name, 3), message: "v1" })).version;
    await pat().promotion.approve({ requestId: (await ana().promotion.request({ versionId: v1.id, reason: "the first version of this rule" })).id, comment: "ok" });
    const enforcing = await pat().deployment.deploy({ versionId: v1.id, mode: "enforcing", reason: "v1 enforces" });
    const v2 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc(name, 4), message: "v2" })).version;
    const shadow = await ana().deployment.deploy({ versionId: v2.id, mode: "shadow" });
    expect(shadow.runnerJobId).toBe(enforcing.runnerJobId);
    return { pipelineId: id, v1, v2, enforcing, shadow };
  }
  const audited = async (action: string, subjectId: string) => server.db.prisma.auditEvent.findFirst({ where: { action, subjectId }, orderBy: { id: "desc" } });

  it("refuses an analyst stopping the enforcing version, or the shadow branch beside it (a routing change), naming the role", async () => {
    const rule = await enforcingRule("ops-stop");
    const before = runner.calls.length;
    await expect(ana().deployment.stop({ deploymentId: rule.enforcing.id, reason: "oops" })).rejects.toMatchObject(forbidden("deployment.stop"));
    await expect(ana().deployment.stop({ deploymentId: rule.shadow.id, reason: "seen enough" })).rejects.toMatchObject(forbidden("deployment.stop"));
    // Nothing reached the runner, and the rule still enforces v1.
    expect(runner.calls.slice(before).filter((c) => c.method !== "GET")).toEqual([]);
    expect(runner.modes).toMatchObject({ "1": "enforcing", "2": "shadow" });
  });

  it("refuses an analyst throttling a sink of the rule job, and a change of routing through a deploy", async () => {
    const rule = await enforcingRule("ops-throttle");
    await expect(ana().deployment.throttle({ deploymentId: rule.shadow.id, nodeId: "alerts", recordsPerSecond: 1 })).rejects.toMatchObject(forbidden("deployment.throttle"));
    await expect(ana().deployment.deploy({ versionId: rule.v2.id, mode: "enforcing" })).rejects.toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("needs the approver role") });
    expect(runner.calls.some((c) => c.url.includes("/throttle"))).toBe(false);
  });

  it("refuses an analyst restoring the rule job from a checkpoint or an old savepoint, or rescaling it", async () => {
    const rule = await enforcingRule("ops-restore");
    const before = runner.calls.length;
    await expect(ana().deployment.restore({ deploymentId: rule.shadow.id, from: { checkpointId: 1 } })).rejects.toMatchObject(forbidden("deployment.restore"));
    await expect(ana().deployment.restore({ deploymentId: rule.shadow.id, from: { savepointPath: "/data/checkpoints/savepoints/old/savepoint-1" } })).rejects.toMatchObject(forbidden("deployment.restore"));
    await expect(ana().deployment.rescale({ deploymentId: rule.shadow.id, parallelism: 2 })).rejects.toMatchObject(forbidden("deployment.rescale"));
    expect(runner.calls.slice(before).filter((c) => c.method === "POST")).toEqual([]);
  });

  it("lets an approver throttle, rescale and restore (from the job's own checkpoint) the rule job, each on the audit trail", async () => {
    const rule = await enforcingRule("ops-approver");
    const throttled = await pat().deployment.throttle({ deploymentId: rule.enforcing.id, nodeId: "alerts", recordsPerSecond: 5 });
    expect(throttled.recordsPerSecond).toBe(5);
    expect(await audited("throttle", rule.enforcing.id)).toMatchObject({ actor: "pat@example.test", details: { pipelineId: rule.pipelineId, nodeId: "alerts", recordsPerSecond: 5, enforcing: true } });
    const lifted = await pat().deployment.throttle({ deploymentId: rule.enforcing.id, nodeId: "alerts", recordsPerSecond: null });
    expect(lifted.recordsPerSecond).toBeNull();
    expect(await audited("throttle", rule.enforcing.id)).toMatchObject({ details: { recordsPerSecond: null } });

    const rescaled = await pat().deployment.rescale({ deploymentId: rule.shadow.id, parallelism: 2, reason: "more keys" });
    expect(await audited("rescale", rule.shadow.id)).toMatchObject({ actor: "pat@example.test", details: { status: "succeeded", parallelism: 2 } });
    const { checkpoints } = await pat().deployment.checkpoints({ deploymentId: rescaled.deployment.id });
    const restored = await pat().deployment.restore({ deploymentId: rescaled.deployment.id, from: { checkpointId: checkpoints[0]?.id ?? -1 }, reason: "replay the last minute" });
    expect(await audited("restore", rescaled.deployment.id)).toMatchObject({ actor: "pat@example.test", details: { status: "succeeded", newDeploymentId: restored.deployment.id } });
  });

  it("restores only from the job's own savepoints, unless an approver explicitly picks another one", async () => {
    const rule = await enforcingRule("ops-savepoints");
    const own = await pat().deployment.savepoint({ deploymentId: rule.shadow.id });
    const foreign = "/data/checkpoints/savepoints/rule-someone-else/savepoint-7";
    await expect(pat().deployment.restore({ deploymentId: rule.shadow.id, from: { savepointPath: foreign } })).rejects.toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining(`${foreign} is not a savepoint of rule job ${rule.shadow.runnerJobId}`) });
    const fromOwn = await pat().deployment.restore({ deploymentId: rule.shadow.id, from: { savepointPath: own.path } });
    const picked = await pat().deployment.restore({ deploymentId: fromOwn.deployment.id, from: { savepointPath: foreign, anotherJob: true }, reason: "the state of the job we migrated from" });
    expect(await audited("restore", fromOwn.deployment.id)).toMatchObject({ actor: "pat@example.test", details: { from: { savepointPath: foreign, anotherJob: true }, newDeploymentId: picked.deployment.id } });
  });

  it("asks which version enforces instead when the enforcing version stops, or for words and a reason; the result says what enforces", async () => {
    const rule = await enforcingRule("ops-successor");
    await expect(pat().deployment.stop({ deploymentId: rule.enforcing.id })).rejects.toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("version 1 enforces rule ops-successor: say which version enforces instead, or that enforcement stops") });
    await expect(pat().deployment.stop({ deploymentId: rule.enforcing.id, enforcementStops: true, reason: "no" })).rejects.toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("needs a written reason") });
    // v2 takes over, with its own approval (by another approver than its author and requester), in one switch.
    await sam().promotion.approve({ requestId: (await ana().promotion.request({ versionId: rule.v2.id, reason: "v2 catches more bursts" })).id, comment: "ok" });
    const beforeHandover = runner.calls.length;
    const handed = await pat().deployment.stop({ deploymentId: rule.enforcing.id, enforceInstead: rule.v2.id, reason: "v1 is retired" });
    expect(runner.modes).toMatchObject({ "1": "stopped", "2": "enforcing" });
    // The switch stopped v1: the rule job itself, where v2 enforces now, was not stopped.
    expect(runner.calls.slice(beforeHandover).filter((c) => c.method === "DELETE" || c.url.includes("/stop"))).toEqual([]);
    expect(handed).toMatchObject({ enforcement: { versionNumber: 2 }, result: expect.stringContaining("version 2 enforces now") });
    expect(await audited("stop", rule.enforcing.id)).toMatchObject({ actor: "pat@example.test", reason: "v1 is retired", details: { enforcedInstead: { versionId: rule.v2.id, number: 2 } } });

    // Now v2 enforces alone: stopping it says in words that the rule enforces nothing, never "running".
    const enforcing2 = await server.db.prisma.deployment.findFirstOrThrow({ where: { pipelineId: rule.pipelineId, mode: "enforcing", status: "running" } });
    const stopped = await pat().deployment.stop({ deploymentId: enforcing2.id, enforcementStops: true, reason: "incident 4711: the rule blocks good customers" });
    expect(stopped.enforcement).toBeNull();
    expect(stopped.result).toContain("enforcement of rule ops-successor stops: no version enforces");
    expect(stopped.result).not.toMatch(/\brunning\b/);
    expect(await audited("stop", enforcing2.id)).toMatchObject({ reason: "incident 4711: the rule blocks good customers", details: { enforcementStops: true } });
  });

  it("lets an analyst operate a rule with no enforcing branch (shadow only), audited, and tells the UI what each role may do", async () => {
    const { id } = await ana().pipeline.create({ name: "ops-shadow", graph: doc("ops-shadow", 3) });
    const v1 = (await ana().pipeline.saveVersion({ pipelineId: id, graph: doc("ops-shadow", 3), message: "v1" })).version;
    const shadow = await ana().deployment.deploy({ versionId: v1.id, mode: "shadow" });
    expect(await ana().deployment.allowedActions({ deploymentId: shadow.id })).toMatchObject({ enforcing: null, actions: { stop: { allowed: true }, throttle: { allowed: true }, restore: { allowed: true }, rescale: { allowed: true } } });
    await ana().deployment.throttle({ deploymentId: shadow.id, nodeId: "alerts", recordsPerSecond: 2 });
    expect(await audited("throttle", shadow.id)).toMatchObject({ actor: "ana@example.test", details: { enforcing: false } });
    expect((await ana().deployment.stop({ deploymentId: shadow.id, reason: "done" })).deployment.status).toBe("stopped");

    const rule = await enforcingRule("ops-matrix");
    const analyst = await ana().deployment.allowedActions({ deploymentId: rule.shadow.id });
    expect(analyst.enforcing).toMatchObject({ versionNumber: 1 });
    expect(analyst.actions.stop).toEqual({ allowed: false, reason: expect.stringMatching(/needs the approver role: rule job .* has an enforcing branch \(version 1\)/) });
    expect(analyst.actions.savepoint).toEqual({ allowed: true, reason: null });
    expect((await pat().deployment.allowedActions({ deploymentId: rule.shadow.id })).actions.stop).toEqual({ allowed: true, reason: null });
  });
});
