// A backtest in Chromium on the real broker (issue 7, "Backtest"): an analyst replays version 2 of a
// velocity rule over a recorded range of its topic (between two instants) from the pipeline's Audit
// tab, sees it finish with its counts, and compares it with a backtest of version 1 over the same
// range: alerts in both, only new, only old, per hour, precision and recall from the records'
// fraud label. Then the same records as a JSON-lines file: the analyst uploads it in the panel (a bad
// file is refused naming its line first), backtests v1 and v2 over it and compares them. Then an emergency rollback of the rule reaches the approvers: the badge in the user
// menu counts it, and the Notifications page shows it with its reason.
// Screenshots: e2e/artifacts/backtest-*.png, backtest-file-*.png, notifications-*.png.
import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, e2eEmail, launchBrowser, startRunner, startWebApp, type TestBrowser, type TestRunner, type WebApp } from "./support";

const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
const run = randomBytes(4).toString("hex");
const PAYMENTS = `e2e-${run}-bt-payments`;
const RULE = `backtested-${run}`;
/** Recent times (the broker deletes by message timestamp after 24 h); every message carries its record's. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 2 * 3_600_000;
/** The range: minutes 10 to 25, which holds fraud bursts 10..19 and legitimate bursts 20..24 whole. */
const FROM = T0 + 10 * 60_000;
const TO = T0 + 25 * 60_000;

// 1 000 ordinary payments on 250 cards (a card every 625 s: never twice in 10 minutes), 20 fraud
// bursts of 4 payments (isFraud) and 10 legitimate bursts of 3, 10 s apart, one burst a minute.
function payments() {
  const records: { txId: string; cardId: string; amount: number; ts: number; isFraud: boolean }[] = [];
  for (let i = 0; i < 1_000; i++) records.push({ txId: `t${i}`, cardId: `c${i % 250}`, amount: 10, ts: T0 + i * 2_500, isFraud: false });
  for (let k = 0; k < 30; k++) for (let j = 0; j < (k < 20 ? 4 : 3); j++) records.push({ txId: `x${k}-${j}`, cardId: `x${k}`, amount: 900, ts: T0 + k * 60_000 + 500 + j * 10_000, isFraud: k < 20 });
  return records.sort((a, b) => a.ts - b.ts);
}

function velocity(threshold: number): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name: RULE,
    settings: { checkpointIntervalMs: 300 },
    nodes: [
      // The e2e runner has no KAFKA_BROKERS of its own: the source names the brokers, and the sinks use them.
      { id: "payments", type: "source.kafka", params: { topic: PAYMENTS, brokers: BROKERS, startFrom: "latest", timestampField: "ts", maxOutOfOrdernessMs: 1000 }, position: { x: 0, y: 80 } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 240, y: 80 } },
      { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" }, position: { x: 480, y: 80 } },
      { id: "alerts", type: "sink.kafka", params: { topic: `${RULE}-enforcement`, deliveryGuarantee: "exactly-once" }, position: { x: 720, y: 80 } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  };
}

describe("a backtest over a topic range, compared in the browser", () => {
  let app: WebApp;
  let runner: TestRunner;
  let analyst: TestBrowser;
  let approver: TestBrowser | undefined;
  let pipelineId = "";
  let v1Backtest = "";

  beforeAll(async () => {
    if (BROKERS.length === 0) throw new Error("backtest.e2e.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
    const kafka = new Kafka({ clientId: `e2e-${run}`, brokers: BROKERS, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: PAYMENTS, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: PAYMENTS, acks: -1, messages: payments().map((r) => ({ partition: 0, timestamp: String(r.ts), value: JSON.stringify(r) })) });
    await producer.disconnect();

    // KAFKA_BROKERS: a file backtest replaces the source that names the brokers, and its Kafka sink still writes.
    runner = await startRunner("backtest", { KAFKA_BROKERS: BROKERS.join(",") });
    app = await startWebApp({ name: "backtest", env: { RUNNER_URL: runner.url, KAFKA_BROKERS: BROKERS.join(",") } });
    const ana = apiClient(app.url, "ana");
    pipelineId = (await ana.pipeline.create.mutate({ name: RULE, graph: velocity(4) })).id;
    const v1 = (await ana.pipeline.saveVersion.mutate({ pipelineId, graph: velocity(4), message: "threshold 4" })).version.id;
    await ana.pipeline.saveVersion.mutate({ pipelineId, graph: velocity(3), message: "threshold 3" });
    // Version 1's backtest over the same range, through the API: the baseline the analyst compares with.
    v1Backtest = (await ana.backtests.start.mutate({ versionId: v1, range: { kind: "kafka", from: { by: "time", ts: FROM }, to: { by: "time", ts: TO } } })).id;
    analyst = await launchBrowser({ signIn: "ana" });
    // The first start may build the web app (next build): minutes on a busy 2-core machine.
  }, 900_000);

  afterAll(async () => {
    await analyst?.close();
    await approver?.close();
    await app?.stop();
    await runner?.stop();
  });

  it("the analyst backtests v2 between two instants, sees it finish, and reads it against v1's backtest", async () => {
    const page = analyst.page;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("tab-audit").click();
    const panel = page.getByTestId("backtest-panel");
    await panel.waitFor();
    // Newest version first: v2 is preselected.
    expect(await panel.getByTestId("backtest-version").inputValue()).not.toBe("");
    await panel.getByTestId("backtest-from-by").selectOption("time");
    await panel.getByTestId("backtest-from").fill(new Date(FROM).toISOString());
    await panel.getByTestId("backtest-to-by").selectOption("time");
    await panel.getByTestId("backtest-to").fill(new Date(TO).toISOString());
    await panel.getByTestId("backtest-start").click();

    // Both backtests finish by themselves; the range holds 360 ordinary payments and 15 whole bursts (55 payments).
    const rows = panel.getByTestId("backtest-row");
    await expect.poll(async () => (await rows.count()) === 2 && (await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-status")))).every((s) => s === "finished"), { timeout: 90_000, interval: 500 }).toBe(true);
    const mine = panel.locator(`[data-testid="backtest-row"]:not([data-backtest="${v1Backtest}"])`);
    expect(await mine.getByTestId("backtest-records").textContent()).toBe("415");
    // Threshold 3: the 3rd and 4th payment of 10 fraud bursts and the 3rd of 5 legitimate ones.
    expect(await mine.getByTestId("backtest-alerts").textContent()).toBe("25");
    expect(await panel.locator(`[data-backtest="${v1Backtest}"]`).getByTestId("backtest-alerts").textContent()).toBe("10");
    await page.screenshot({ path: artifactPath("backtest-1-finished.png"), fullPage: true });

    await mine.getByTestId("backtest-compare").click();
    const comparison = panel.getByTestId("backtest-comparison");
    await comparison.getByTestId("backtest-against").selectOption("backtest");
    await comparison.getByTestId("backtest-other").selectOption(v1Backtest);
    const view = comparison.getByTestId("comparison");
    await expect.poll(async () => view.getByTestId("comparison-both").textContent(), { timeout: 30_000 }).toBe("10");
    expect(await view.getByTestId("comparison-only-new").textContent()).toBe("15");
    expect(await view.getByTestId("comparison-only-old").textContent()).toBe("0");
    // Precision over the records' isFraud label: 20 of 25 against 10 of 10; recall over the range's 40 fraud payments.
    const scores = await view.getByTestId("comparison-scores").textContent();
    expect(scores).toContain("80.0 % / 100.0 %");
    expect(scores).toContain("50.0 % / 25.0 %");
    expect(scores).toContain("of 40 labelled fraud");
    expect(await view.getByTestId("comparison-per-hour").locator("tbody tr").count()).toBeGreaterThan(0);
    await comparison.scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("backtest-2-comparison.png"), fullPage: true });
    await panel.screenshot({ path: artifactPath("backtest-3-panel.png") });
    expect(analyst.pageErrors).toEqual([]);
  });

  it("the analyst uploads a recorded file in the panel (a bad one refused, naming the line), backtests v1 and v2 over it and compares them", async () => {
    // The upload route takes JSON lines with the CSRF header only, from a signed-in analyst.
    const plain = await fetch(`${app.url}/api/backtests/files`, { method: "POST", headers: { "content-type": "text/plain", "x-keyflow-csrf": "1" }, body: "{}\n" });
    expect(plain.status).toBe(415);
    const anonymous = await fetch(`${app.url}/api/backtests/files`, { method: "POST", headers: { "content-type": "application/x-ndjson", "x-keyflow-csrf": "1" }, body: "{}\n" });
    expect(anonymous.status).toBe(401);

    const page = analyst.page;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("tab-audit").click();
    const panel = page.getByTestId("backtest-panel");
    await panel.waitFor();
    const rows = panel.getByTestId("backtest-row");
    await rows.first().waitFor();
    const before = new Set(await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-backtest") ?? "")));
    await panel.getByTestId("backtest-kind").selectOption("file");
    const input = panel.getByTestId("backtest-upload");

    await input.setInputFiles({ name: "bad.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from('{"txId":"a"}\n{"txId":\n') });
    await expect.poll(async () => panel.getByRole("alert").textContent(), { timeout: 30_000 }).toMatch(/^bad\.jsonl: line 2 is not JSON/);
    await page.screenshot({ path: artifactPath("backtest-file-1-refused.png"), fullPage: true });

    // The records of the topic range above (minutes 10 to 25): 415 payments.
    const recorded = payments().filter((r) => r.ts >= FROM && r.ts < TO);
    expect(recorded.length).toBe(415);
    await input.setInputFiles({ name: "minutes-10-25.jsonl", mimeType: "application/x-ndjson", buffer: Buffer.from(recorded.map((r) => JSON.stringify(r)).join("\n") + "\n") });
    await expect.poll(async () => panel.getByTestId("backtest-uploaded").textContent().catch(() => null), { timeout: 30_000 }).toBe("minutes-10-25.jsonl: 415 records");
    expect(await panel.getByRole("alert").count()).toBe(0);
    expect(await panel.getByTestId("backtest-file").inputValue()).toMatch(/^uploads\/[a-z0-9]+-[0-9a-f]{24}\.jsonl$/);

    // v1 (the older version, second in the list), then v2.
    const versions = panel.getByTestId("backtest-version");
    await versions.selectOption({ index: 1 });
    await panel.getByTestId("backtest-start").click();
    await expect.poll(async () => rows.count(), { timeout: 30_000 }).toBe(before.size + 1);
    await versions.selectOption({ index: 0 });
    await panel.getByTestId("backtest-start").click();
    const fresh = () => rows.evaluateAll((els, known) => els.filter((e) => !known.includes(e.getAttribute("data-backtest") ?? "")).map((e) => ({ id: e.getAttribute("data-backtest") ?? "", status: e.getAttribute("data-status") })), [...before]);
    await expect.poll(async () => (await fresh()).map((r) => r.status).join(","), { timeout: 90_000, interval: 500 }).toBe("finished,finished");
    // Newest first: v2's, then v1's.
    const [v2File, v1File] = (await fresh()).map((r) => r.id);
    const v2Row = panel.locator(`[data-backtest="${v2File}"]`);
    const v1Row = panel.locator(`[data-backtest="${v1File}"]`);
    expect(await v2Row.locator("td").nth(1).textContent()).toBe("v2");
    expect(await v2Row.getByTestId("backtest-records").textContent()).toBe("415");
    // The same alerts as over the topic range: 25 at threshold 3, 10 at threshold 4.
    expect(await v2Row.getByTestId("backtest-alerts").textContent()).toBe("25");
    expect(await v1Row.getByTestId("backtest-alerts").textContent()).toBe("10");
    // Each row's range names the file as picked, beside its path on the runner.
    expect(await panel.locator(".kf-backtests__range", { hasText: "file minutes-10-25.jsonl (uploads/" }).count()).toBe(2);
    await page.screenshot({ path: artifactPath("backtest-file-2-finished.png"), fullPage: true });

    await v2Row.getByTestId("backtest-compare").click();
    const comparison = panel.getByTestId("backtest-comparison");
    await comparison.getByTestId("backtest-against").selectOption("backtest");
    // Only the other backtest over the same file is offered.
    expect(await comparison.getByTestId("backtest-other").locator("option").evaluateAll((els) => els.map((e) => e.getAttribute("value")))).toEqual(["", v1File]);
    await comparison.getByTestId("backtest-other").selectOption(v1File ?? "");
    const view = comparison.getByTestId("comparison");
    await expect.poll(async () => view.getByTestId("comparison-both").textContent(), { timeout: 30_000 }).toBe("10");
    expect(await view.getByTestId("comparison-only-new").textContent()).toBe("15");
    expect(await view.getByTestId("comparison-only-old").textContent()).toBe("0");
    await comparison.scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("backtest-file-3-comparison.png"), fullPage: true });
    expect(analyst.pageErrors).toEqual([]);
  });

  it("an emergency rollback reaches the approvers: the badge counts it and the Notifications page shows why", async () => {
    const ana = apiClient(app.url, "ana");
    const pat = apiClient(app.url, "pat", "approver");
    const [v2, v1] = (await ana.pipeline.get.query({ id: pipelineId })).versions.map((v) => v.id);
    if (!v1 || !v2) throw new Error("the pipeline should have two versions");
    const asked1 = await ana.promotion.request.mutate({ versionId: v1, reason: "first version of this rule, e2e" });
    await pat.promotion.approve.mutate({ requestId: asked1.id, comment: "ok" });
    await pat.deployment.deploy.mutate({ versionId: v1, mode: "enforcing", reason: "v1 enforces" });
    await ana.deployment.deploy.mutate({ versionId: v2, mode: "shadow" });
    const asked2 = await ana.promotion.request.mutate({ versionId: v2, reason: "the backtest catches more bursts" });
    await pat.promotion.approve.mutate({ requestId: asked2.id, comment: "backtest read" });
    await pat.deployment.deploy.mutate({ versionId: v2, mode: "enforcing", reason: `promotion ${asked2.id}` });
    await pat.promotion.rollback.mutate({ pipelineId, emergency: true, reason: "v2 blocks good customers at checkout" });

    approver = await launchBrowser({ signIn: "sam", role: "approver" });
    const page = approver.page;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    const badge = page.getByTestId("nav-notifications");
    await expect.poll(async () => badge.getAttribute("data-unread"), { timeout: 20_000 }).toBe("1");
    expect(await page.getByTestId("notifications-unread").textContent()).toBe("1");
    // The analyst is not an approver: no badge.
    await analyst.page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await analyst.page.getByTestId("user-menu").waitFor();
    expect(await analyst.page.getByTestId("nav-notifications").count()).toBe(0);

    await badge.click();
    const item = page.getByTestId("notification");
    await item.first().waitFor({ timeout: 20_000 });
    expect(await item.count()).toBe(1);
    expect(await item.first().getAttribute("data-kind")).toBe("emergency_rollback");
    const text = await item.first().textContent();
    expect(text).toContain(`Emergency rollback of ${RULE}: v2 → v1`);
    expect(text).toContain(`${e2eEmail("pat")} rolled ${RULE} back to version 1 without an approval: v2 blocks good customers at checkout`);
    await page.screenshot({ path: artifactPath("notifications-1-unread.png"), fullPage: true });
    await page.getByTestId("notification-read").click();
    await expect.poll(async () => item.first().getAttribute("data-read"), { timeout: 20_000 }).toBe("true");
    await page.screenshot({ path: artifactPath("notifications-2-read.png"), fullPage: true });
    expect(approver.pageErrors).toEqual([]);
  });
});
