// Two people and the audit trail, in Chromium (issue 7, promotion requests): the analyst asks to
// promote the newest version with a reason; an approver, signed in in another browser, approves it
// with a comment; both see the request's state, and the pipeline's audit trail shows both people's
// actions. A newer version then voids the approval. Then, on the real broker: version 1 enforcing
// and version 2 in shadow (branches of one rule job), the approver reads the comparison in the panel,
// approves v2 there after its state check against the rule job's checkpoint, promotes it choosing
// that v1 stops (its branch is then stopped in the rule job), and an emergency rollback from the
// panel returns enforcement to v1 (each a switch of that job at a checkpoint boundary), on the audit
// trail.
// Screenshots: e2e/artifacts/promotion-*.png.
import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, e2eEmail, launchBrowser, startRunner, startWebApp, type TestBrowser, type TestRunner, type WebApp } from "./support";

const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);

function rule(name: string, threshold: number): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" }, position: { x: 0, y: 80 } },
      { id: "big", type: "filter", params: { expression: `amount > ${threshold}` }, position: { x: 320, y: 80 } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 640, y: 80 } },
    ],
    edges: [
      { from: "payments", to: "big" },
      { from: "big", to: "alerts" },
    ],
  };
}

describe("a promotion request between two people, on the record", () => {
  let app: WebApp;
  let runner: TestRunner;
  let analyst: TestBrowser;
  let approver: TestBrowser;
  const name = `promoted-${Date.now().toString(36)}`;
  let pipelineId = "";

  beforeAll(async () => {
    if (BROKERS.length === 0) throw new Error("audit-promotion.e2e.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
    runner = await startRunner("promotion");
    app = await startWebApp({ name: "promotion", env: { RUNNER_URL: runner.url, KAFKA_BROKERS: BROKERS.join(",") } });
    const ana = apiClient(app.url, "ana");
    pipelineId = (await ana.pipeline.create.mutate({ name, graph: rule(name, 1000) })).id;
    await ana.pipeline.saveVersion.mutate({ pipelineId, graph: rule(name, 1000), message: "first cut" });
    analyst = await launchBrowser({ signIn: "ana" });
    approver = await launchBrowser({ signIn: "pat", role: "approver" });
  });

  afterAll(async () => {
    await analyst?.close();
    await approver?.close();
    await app?.stop();
    await runner?.stop();
  });

  it("is asked for by the analyst, approved by the approver with a comment, and voided by a newer version", async () => {
    const open = async (browser: TestBrowser) => {
      await browser.page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
      await browser.page.getByTestId("tab-audit").click();
      await browser.page.getByTestId("promotion-panel").waitFor();
      // The days in shadow come from the API: the panel is hydrated and has its data, so what is typed
      // next stays typed (on a busy machine a reason typed earlier was lost and the request refused).
      await browser.page.getByTestId("promotion-days").waitFor({ timeout: 20_000 });
    };
    await open(analyst);
    await analyst.page.getByTestId("promotion-reason").fill("two weeks in shadow, no false positives");
    await analyst.page.getByTestId("promotion-request").click();
    const mine = analyst.page.locator('[data-status="pending"]');
    const refused = analyst.page.locator('.kf-promotion [role="alert"]');
    // A refusal shows its message in the failure instead of a bare timeout.
    await expect.poll(async () => ((await refused.count()) > 0 ? `refused: ${await refused.textContent()}` : await mine.count()), { timeout: 20_000 }).toBe(1);
    // The requester is never offered the approval.
    expect(await analyst.page.getByTestId("promotion-approve").count()).toBe(0);
    await analyst.page.screenshot({ path: artifactPath("promotion-1-requested.png") });

    await open(approver);
    await approver.page.locator('[data-status="pending"]').waitFor({ timeout: 20_000 });
    await approver.page.getByTestId("promotion-comment").fill("numbers match the shadow run");
    await approver.page.getByTestId("promotion-approve").click();
    await approver.page.locator('[data-status="approved"]').waitFor({ timeout: 20_000 });
    expect(await approver.page.locator('[data-status="approved"]').textContent()).toContain(`approved by ${e2eEmail("pat")}: “numbers match the shadow run”`);

    // The pipeline's trail shows both people.
    const trail = approver.page.getByTestId("audit-view");
    await expect.poll(async () => (await trail.locator("[data-action]").allTextContents()).join("\n"), { timeout: 20_000 }).toContain(`approve · ${e2eEmail("pat")}`);
    const text = (await trail.locator("[data-action]").allTextContents()).join("\n");
    expect(text).toContain(`request · ${e2eEmail("ana")}`);
    expect(text).toContain("why: numbers match the shadow run");
    await approver.page.screenshot({ path: artifactPath("promotion-2-approved.png") });

    // A newer version: the approval no longer holds.
    await apiClient(app.url, "ana").pipeline.saveVersion.mutate({ pipelineId, graph: rule(name, 2000), message: "tighter" });
    await open(analyst);
    await analyst.page.locator('[data-status="void"]').waitFor({ timeout: 20_000 });
    await analyst.page.screenshot({ path: artifactPath("promotion-3-void.png") });
  });

  it("on the real broker: the approver reads shadow v2 against enforcing v1 and its state check, promotes v2 stopping v1, and an emergency rollback returns to v1", async () => {
    const run = randomBytes(4).toString("hex");
    const rule2 = `shadowed-${run}`;
    const payments = `e2e-${run}-payments`;
    // 1 000 ordinary payments on 250 cards (none alerts), 20 fraud bursts of 4 (isFraud) and 10 legitimate bursts of 3: threshold 4 alerts 20 times, threshold 3 50 times.
    const kafka = new Kafka({ clientId: `e2e-${run}`, brokers: BROKERS, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: payments, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const t0 = Date.UTC(2026, 0, 1);
    const records: { txId: string; cardId: string; amount: number; ts: number; isFraud: boolean }[] = [];
    for (let i = 0; i < 1_000; i++) records.push({ txId: `t${i}`, cardId: `c${i % 250}`, amount: 10, ts: t0 + i * 2_500, isFraud: false });
    for (let k = 0; k < 30; k++) for (let j = 0; j < (k < 20 ? 4 : 3); j++) records.push({ txId: `x${k}-${j}`, cardId: `x${k}`, amount: 900, ts: t0 + k * 60_000 + 500 + j * 10_000, isFraud: k < 20 });
    records.sort((a, b) => a.ts - b.ts);
    const velocity = (threshold: number): PipelineDocumentInput => ({
      format: PIPELINE_FORMAT,
      name: rule2,
      settings: { checkpointIntervalMs: 300 },
      nodes: [
        // The e2e runner has no KAFKA_BROKERS of its own: the source names the brokers, and the sinks use them.
        { id: "payments", type: "source.kafka", params: { topic: payments, brokers: BROKERS, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1000 }, position: { x: 0, y: 80 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 240, y: 80 } },
        { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" }, position: { x: 480, y: 80 } },
        { id: "alerts", type: "sink.kafka", params: { topic: `${rule2}-enforcement`, deliveryGuarantee: "exactly-once" }, position: { x: 720, y: 80 } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "velocity" },
        { from: "velocity", to: "alerts" },
      ],
    });
    const ana = apiClient(app.url, "ana");
    const pat = apiClient(app.url, "pat", "approver");
    // v1 and v2 run as branches of one rule job; it has read the whole input once no partition lags and two more checkpoints completed.
    type Job = { sources: Record<string, { lag: Record<string, number> }>; lastCheckpoint: { id: number } | null };
    const job = async (runnerJobId: string | null) => (await (await fetch(`${runner.url}/jobs/${runnerJobId}`, { headers: { authorization: `Bearer ${runner.token}` } })).json()) as Job;
    const caughtUp = async (runnerJobId: string | null) => {
      await expect.poll(async () => Object.values((await job(runnerJobId)).sources.payments?.lag ?? { none: 1 }).every((n) => n === 0), { timeout: 60_000, interval: 250 }).toBe(true);
      const at = (await job(runnerJobId)).lastCheckpoint?.id ?? 0;
      await expect.poll(async () => (await job(runnerJobId)).lastCheckpoint?.id ?? 0, { timeout: 60_000, interval: 250 }).toBeGreaterThanOrEqual(at + 2);
    };
    const id = (await ana.pipeline.create.mutate({ name: rule2, graph: velocity(4) })).id;
    const v1 = (await ana.pipeline.saveVersion.mutate({ pipelineId: id, graph: velocity(4), message: "threshold 4" })).version.id;
    const asked1 = await ana.promotion.request.mutate({ versionId: v1, reason: "first version of this rule, e2e" });
    await pat.promotion.approve.mutate({ requestId: asked1.id, comment: "ok" });
    const enforcing1 = await pat.deployment.deploy.mutate({ versionId: v1, mode: "enforcing", reason: "v1 enforces" });
    const v2 = (await ana.pipeline.saveVersion.mutate({ pipelineId: id, graph: velocity(3), message: "threshold 3" })).version.id;
    const shadow2 = await ana.deployment.deploy.mutate({ versionId: v2, mode: "shadow" });
    expect(shadow2.runnerJobId).toBe(enforcing1.runnerJobId);
    // The input arrives once both versions run.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: payments, acks: -1, messages: records.map((r) => ({ partition: 0, value: JSON.stringify(r) })) });
    await producer.disconnect();
    await caughtUp(enforcing1.runnerJobId);

    await approver.page.goto(`${app.url}/?pipeline=${id}`, { waitUntil: "domcontentloaded" });
    await approver.page.getByTestId("tab-audit").click();
    await approver.page.getByTestId("comparison").waitFor();
    await expect.poll(async () => approver.page.getByTestId("comparison-only-new").textContent(), { timeout: 30_000 }).toBe("30");
    expect(await approver.page.getByTestId("comparison-both").textContent()).toBe("20");
    expect(await approver.page.getByTestId("comparison-only-old").textContent()).toBe("0");
    expect(await approver.page.getByTestId("comparison-scores").textContent()).toContain("80.0 % / 100.0 %");
    expect(await approver.page.getByTestId("promotion-days").getAttribute("data-early")).toBe("true");
    // An "only new" alert opens to its explanation: the 3 payments of its burst, and v2's threshold.
    await approver.page.getByTestId("comparison-samples").locator("summary").first().click();
    const why = approver.page.getByTestId("alert-explanation").first();
    await why.locator("summary").click();
    expect(await why.getByTestId("alert-evidence").locator("tbody tr").count()).toBe(3);
    expect(await why.getByTestId("alert-parameters").textContent()).toContain('"threshold":3');
    await approver.page.screenshot({ path: artifactPath("promotion-4-comparison.png"), fullPage: true });

    // v2 is asked for (early, so with a reason); in the panel the approver reads its state check
    // against the rule job's newest checkpoint, approves, and promotes it choosing that v1 stops.
    const asked2 = await ana.promotion.request.mutate({ versionId: v2, reason: "catches the bursts v1 misses" });
    await approver.page.reload({ waitUntil: "domcontentloaded" });
    await approver.page.getByTestId("tab-audit").click();
    const request2 = approver.page.getByTestId(`promotion-${asked2.id}`);
    const check = request2.getByTestId("promotion-compat");
    await expect.poll(async () => check.getAttribute("data-compatible"), { timeout: 30_000 }).toBe("yes");
    expect(await check.textContent()).toContain(`State check of v2: compatible with rule job ${enforcing1.runnerJobId}, checkpoint `);
    // The bundle's graph diff against the enforcing version: velocity's threshold 4 → 3.
    const changes = request2.getByTestId("promotion-diff");
    await changes.locator("summary").click();
    expect(await changes.locator("summary").textContent()).toBe("Changes of v2 against v1 (enforcing)");
    expect(await changes.getByTestId("diff-node-velocity").textContent()).toContain("threshold");
    await request2.getByTestId("promotion-comment").fill("precision 80 % is acceptable");
    await request2.getByTestId("promotion-approve").click();
    await expect.poll(async () => request2.getAttribute("data-status"), { timeout: 20_000 }).toBe("approved");
    await request2.getByTestId("promotion-previous").selectOption("stopped");
    await approver.page.screenshot({ path: artifactPath("promotion-5-bundle.png"), fullPage: true });
    await request2.getByTestId("promotion-enforce").click();
    await expect.poll(async () => approver.page.getByTestId("rollback").textContent(), { timeout: 60_000 }).toContain("Enforcing now: v2");
    // v1's branch stopped at the switch (it does not drop back to shadow): the runner's routing, v1's rows, and the audit say so.
    const routing = async () => ((await (await fetch(`${runner.url}/jobs/${enforcing1.runnerJobId}/routing`, { headers: { authorization: `Bearer ${runner.token}` } })).json()) as { modes: Record<string, string> }).modes;
    expect(await routing()).toEqual({ "1": "stopped", "2": "enforcing" });
    const detail = await pat.pipeline.get.query({ id });
    expect(detail.deployments.filter((d) => d.versionId === v1 && (d.status === "running" || d.status === "pending"))).toEqual([]);
    const promote = (await pat.audit.list.query({ action: "promote", pipelineId: id })).events[0];
    expect(promote?.actor).toBe(e2eEmail("pat"));
    expect(promote?.details).toMatchObject({ versionId: v2, previous: "stopped", switch: { before: { "1": "enforcing", "2": "shadow" }, after: { "1": "stopped", "2": "enforcing" } } });
    const approval = (await pat.audit.list.query({ action: "approve", pipelineId: id })).events.find((e) => e.subjectId === asked2.id);
    expect(approval?.details).toMatchObject({ stateCheck: { ruleJobId: enforcing1.runnerJobId, compatible: true } });
    // v2 enforces now: its request no longer offers to deploy it in enforcing mode.
    expect(await request2.getByTestId("promotion-enforce").count()).toBe(0);
    await approver.page.screenshot({ path: artifactPath("promotion-6-promoted.png"), fullPage: true });

    // Rolled back from the panel in an emergency: v1 enforces again (its stopped branch kept its state), v2 drops to shadow.
    await approver.page.getByTestId("rollback-emergency").waitFor({ timeout: 20_000 });
    await approver.page.getByTestId("rollback-reason").fill("v2 blocks good customers at checkout");
    await approver.page.getByTestId("rollback-emergency").click();
    const trail = approver.page.getByTestId("audit-view");
    await expect.poll(async () => (await trail.locator("[data-action]").allTextContents()).join("\n"), { timeout: 20_000 }).toContain(`rollback · ${e2eEmail("pat")}`);
    expect((await trail.locator("[data-action]").allTextContents()).join("\n")).toContain("why: v2 blocks good customers at checkout");
    await expect.poll(async () => approver.page.getByTestId("rollback").textContent(), { timeout: 20_000 }).toContain("Enforcing now: v1");
    expect(await routing()).toEqual({ "1": "enforcing", "2": "shadow" });
    await approver.page.screenshot({ path: artifactPath("promotion-7-rollback.png"), fullPage: true });
  });
});
