// A rule's whole lifecycle in Chromium, as two people do it (issue 7): the analyst builds a rule
// from the velocity template, types its Kafka topics in the inspector, saves v1 and deploys it to
// shadow with the deploy button, asks to promote it; the approver, in another browser, approves and
// enforces it. The analyst edits the threshold, saves v2 and deploys it to shadow; events arrive and
// the comparison fills in; the approver approves v2 and enforces it, and a read_committed consumer
// sees the enforcement topic receive v2's alerts; the audit view shows both people; an emergency
// rollback restores v1 (its threshold decides what is enforced again). Screenshots: e2e/artifacts/lifecycle-*.png.
import { randomBytes } from "node:crypto";
import type { Consumer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, artifactPath, e2eEmail, launchBrowser, ruleTopics, startRunner, startWebApp, type TestBrowser, type TestRunner, type WebApp } from "./support";

const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);

type Payment = { txId: string; cardId: string; amount: number; ts: number; isFraud: boolean };
// Recent event times: the sinks stamp messages with them, and the broker's retention deletes older ones.
const t0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;

/** 1 000 ordinary payments on 250 cards (a card pays every 625 s: never a burst), 20 fraud bursts of 4 (cards x0…x19) and 10 legitimate bursts of 3 (x20…x29), each within 30 s. */
function firstBatch(): Payment[] {
  const records: Payment[] = [];
  for (let i = 0; i < 1_000; i++) records.push({ txId: `t${i}`, cardId: `c${i % 250}`, amount: 10, ts: t0 + i * 2_500, isFraud: false });
  for (let k = 0; k < 30; k++) for (let j = 0; j < (k < 20 ? 4 : 3); j++) records.push({ txId: `x${k}-${j}`, cardId: `x${k}`, amount: 900, ts: t0 + k * 60_000 + 500 + j * 10_000, isFraud: k < 20 });
  return records.sort((a, b) => a.ts - b.ts);
}

/** Later in event time than what came before: bursts (each a card paying `size` times within 20 s, a minute apart), then ordinary payments that move the watermark on. */
function laterBatch(from: number, bursts: { card: string; size: number }[]): Payment[] {
  const records: Payment[] = [];
  bursts.forEach(({ card, size }, k) => {
    for (let j = 0; j < size; j++) records.push({ txId: `${card}-${j}`, cardId: card, amount: 900, ts: from + k * 60_000 + j * 10_000, isFraud: true });
  });
  const after = from + bursts.length * 60_000 + 120_000;
  for (let i = 0; i < 40; i++) records.push({ txId: `u${from}-${i}`, cardId: `u${from}-${i}`, amount: 10, ts: after + i * 15_000, isFraud: false });
  return records.sort((a, b) => a.ts - b.ts);
}

describe("a rule's lifecycle, driven by an analyst and an approver", () => {
  let app: WebApp;
  let runner: TestRunner;
  let analyst: TestBrowser;
  let approver: TestBrowser;
  let consumer: Consumer | undefined;

  beforeAll(async () => {
    if (BROKERS.length === 0) throw new Error("lifecycle.e2e.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
    runner = await startRunner("lifecycle");
    app = await startWebApp({ name: "lifecycle", env: { RUNNER_URL: runner.url, KAFKA_BROKERS: BROKERS.join(",") } });
    analyst = await launchBrowser({ signIn: "ana" });
    approver = await launchBrowser({ signIn: "pat", role: "approver" });
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await analyst?.close();
    await approver?.close();
    await app?.stop();
    await runner?.stop();
  });

  it("from template to shadow, comparison, approval, enforcement and rollback", async () => {
    const run = randomBytes(4).toString("hex");
    const name = `lifecycle-${run}`;
    // What reaches the enforcement topic, as a downstream system reads it: committed transactions only.
    const topics = await ruleTopics(BROKERS, run);
    const { payments, enforcement, produce, enforced } = topics;
    consumer = topics.consumer;
    const alertedCards = (prefix: string) => new Set(enforced.flatMap((v) => [...v.matchAll(new RegExp(`"cardId":"(${prefix}\\d+)"`, "g"))].map((m) => m[1] ?? "")));

    const a = analyst.page;
    const p = approver.page;
    const openAudit = async (page: typeof a, url: string) => {
      await page.goto(url, { waitUntil: "domcontentloaded" });
      await page.getByTestId("tab-audit").click();
      await page.getByTestId("promotion-panel").waitFor();
      // The panel has its data once the days in shadow show: what is typed next stays typed.
      await page.getByTestId("promotion-days").waitFor({ timeout: 20_000 });
    };
    const enforcingNow = (page: typeof a) => page.getByTestId("rollback").textContent();
    const saveVersion = async (message: string, number: number) => {
      await a.getByTestId("save-version").click();
      const dialog = a.getByTestId("save-version-dialog");
      await dialog.getByTestId("save-version-message").fill(message);
      await dialog.getByTestId("save-version-confirm").click();
      await dialog.waitFor({ state: "detached", timeout: 20_000 });
      await a.getByTestId("tab-history").click();
      await expect.poll(() => a.getByTestId(`version-row-${number}`).textContent(), { timeout: 20_000 }).toContain(message);
    };
    const deployToShadow = async (number: number) => {
      const button = a.getByTestId("deploy-button");
      await expect.poll(() => button.isEnabled(), { timeout: 20_000 }).toBe(true);
      await button.click();
      await expect.poll(async () => ((await a.getByTestId("deploy-error").count()) > 0 ? "deploy failed" : await a.getByTestId(`version-row-${number}`).textContent()), { timeout: 60_000 }).toContain("deployed");
    };
    const ask = async (reason: string) => {
      await a.getByTestId("promotion-reason").fill(reason);
      await a.getByTestId("promotion-request").click();
      const refused = a.locator('.kf-promotion [role="alert"]');
      await expect.poll(async () => ((await refused.count()) > 0 ? `refused: ${await refused.textContent()}` : await a.locator('[data-status="pending"]').count()), { timeout: 20_000 }).toBe(1);
    };
    const approveAndEnforce = async (url: string, number: number, comment: string) => {
      await openAudit(p, url);
      const request = p.locator("li[data-status]").filter({ has: p.locator("strong", { hasText: new RegExp(`^v${number}$`) }) }).first();
      await expect.poll(() => request.getAttribute("data-status"), { timeout: 20_000 }).toBe("pending");
      await request.getByTestId("promotion-comment").fill(comment);
      const approve = request.getByTestId("promotion-approve");
      await expect.poll(() => approve.isEnabled(), { timeout: 60_000 }).toBe(true);
      await approve.click();
      await expect.poll(() => request.getAttribute("data-status"), { timeout: 20_000 }).toBe("approved");
      await request.getByTestId("promotion-enforce").click();
      await expect.poll(() => enforcingNow(p), { timeout: 120_000, interval: 1_000 }).toContain(`Enforcing now: v${number}`);
    };

    // The analyst: a new rule from the velocity template, its topics typed in the inspector.
    await a.goto(app.url, { waitUntil: "domcontentloaded" });
    const templates = a.getByTestId("template-dialog");
    // A click before the page is hydrated opens nothing: click again until the dialog shows, as a person would.
    await expect
      .poll(
        async () => {
          if (!(await templates.isVisible())) await a.getByTestId("new-from-template").click();
          return templates.getByTestId("template-velocity-check").isVisible();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(true);
    await templates.getByTestId("template-velocity-check").click();
    await templates.getByTestId("template-name").fill(name);
    await templates.getByTestId("template-create").click();
    await expect.poll(() => a.getByTestId("pipeline-title").textContent(), { timeout: 20_000 }).toBe(name);
    await a.getByTestId("node-payments").click();
    await a.getByTestId("param-topic").fill(payments);
    // The e2e runner has no KAFKA_BROKERS of its own: the source names them, and the sinks use them.
    await a.getByTestId("param-brokers").fill(BROKERS.join("\n"));
    await a.getByTestId("node-alerts").click();
    await a.getByTestId("param-topic").fill(enforcement);
    await a.getByTestId("node-latePayments").click();
    await a.getByTestId("param-topic").fill(`e2e-${run}-late`);
    await a.getByTestId("node-velocity").click();
    await a.getByTestId("param-threshold").fill("4");
    await expect.poll(() => a.getByTestId("problems-summary").textContent()).not.toContain("error");
    await a.screenshot({ path: artifactPath("lifecycle-1-built.png") });
    await saveVersion("4 payments of a card within 2 minutes", 1);
    await deployToShadow(1);
    const pipelineId = (await apiClient(app.url, "ana").pipeline.list.query()).find((x) => x.name === name)?.id;
    expect(pipelineId).toBeTruthy();
    const url = `${app.url}/?pipeline=${pipelineId}`;

    // v1 is asked for, approved and enforced: the rule's first enforcing version.
    await openAudit(a, url);
    await ask("first version of this rule");
    await approveAndEnforce(url, 1, "fine as a first cut");

    // The analyst lowers the threshold in the inspector: v2, in shadow beside v1.
    await a.goto(url, { waitUntil: "domcontentloaded" });
    await a.getByTestId("node-velocity").click();
    await a.getByTestId("param-threshold").fill("3");
    await expect.poll(() => a.getByTestId("problems-summary").textContent()).not.toContain("error");
    await saveVersion("3 payments are enough", 2);
    await deployToShadow(2);

    // Events arrive; the analyst watches the comparison fill in: v1's 20 bursts in both, v2 alone catches the 10 bursts of 3.
    await produce(firstBatch());
    await openAudit(a, url);
    await a.getByTestId("comparison").waitFor();
    await expect
      .poll(
        async () => {
          await a.getByTestId("comparison-refresh").click();
          return (await a.getByTestId("comparison-only-new").count()) > 0 ? `${await a.getByTestId("comparison-both").textContent()}/${await a.getByTestId("comparison-only-new").textContent()}` : "none";
        },
        { timeout: 180_000, interval: 3_000 },
      )
      .toBe("20/30");
    expect(await a.getByTestId("comparison-only-old").textContent()).toBe("0");
    await a.screenshot({ path: artifactPath("lifecycle-2-comparison.png"), fullPage: true });
    // Enforcement so far carries v1's alerts only: the fraud bursts, none of the bursts of 3.
    await expect.poll(() => alertedCards("x").size, { timeout: 120_000, interval: 1_000 }).toBe(20);
    expect([...alertedCards("x")].every((card) => Number(card.slice(1)) < 20)).toBe(true);

    // v2 is asked for and approved; enforcing, its alerts reach the enforcement topic.
    await ask("catches the bursts of 3 that v1 misses");
    await approveAndEnforce(url, 2, "the comparison shows only extra catches");
    // Five bursts of 3 (cards y0…y4): only v2's threshold alerts on them.
    await produce(laterBatch(t0 + 3_000_000, [0, 1, 2, 3, 4].map((k) => ({ card: `y${k}`, size: 3 }))));
    await expect.poll(() => alertedCards("y").size, { timeout: 180_000, interval: 1_000 }).toBe(5);
    await p.screenshot({ path: artifactPath("lifecycle-3-enforced.png"), fullPage: true });

    // Both people are on the pipeline's trail.
    const trail = p.getByTestId("audit-view");
    await expect.poll(async () => (await trail.locator("[data-action]").allTextContents()).join("\n"), { timeout: 20_000 }).toContain(`approve · ${e2eEmail("pat")}`);
    const text = (await trail.locator("[data-action]").allTextContents()).join("\n");
    expect(text).toContain(`request · ${e2eEmail("ana")}`);
    expect(text).toContain("why: the comparison shows only extra catches");

    // An emergency rollback from the panel: v1 enforces again.
    await p.getByTestId("rollback-reason").fill("v2 blocks good customers at checkout");
    await p.getByTestId("rollback-emergency").click();
    await expect.poll(async () => (await trail.locator("[data-action]").allTextContents()).join("\n"), { timeout: 20_000 }).toContain(`rollback · ${e2eEmail("pat")}`);
    await expect.poll(() => enforcingNow(p), { timeout: 120_000, interval: 1_000 }).toContain("Enforcing now: v1");
    await p.screenshot({ path: artifactPath("lifecycle-4-rollback.png"), fullPage: true });
    // Restored: bursts of 3 (z0…z2) no longer reach the enforcement topic, bursts of 4 (w0…w2) do.
    await produce(laterBatch(t0 + 4_000_000, [...[0, 1, 2].map((k) => ({ card: `z${k}`, size: 3 })), ...[0, 1, 2].map((k) => ({ card: `w${k}`, size: 4 }))]));
    await expect.poll(() => alertedCards("w").size, { timeout: 180_000, interval: 1_000 }).toBe(3);
    expect(alertedCards("z").size).toBe(0);
    await openAudit(a, url);
    await expect.poll(() => enforcingNow(a), { timeout: 20_000 }).toContain("Enforcing now: v1");
  }, 900_000);
});
