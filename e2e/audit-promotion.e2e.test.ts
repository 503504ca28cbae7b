// Two people and the audit trail, in Chromium (issue 7, promotion requests): the analyst asks to
// promote the newest version with a reason; an approver, signed in in another browser, approves it
// with a comment; both see the request's state, and the pipeline's audit trail shows both people's
// actions. A newer version then voids the approval. Screenshots: e2e/artifacts/promotion-*.png.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, e2eEmail, launchBrowser, startWebApp, type TestBrowser, type WebApp } from "./support";

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
  let analyst: TestBrowser;
  let approver: TestBrowser;
  const name = `promoted-${Date.now().toString(36)}`;
  let pipelineId = "";

  beforeAll(async () => {
    app = await startWebApp({ name: "promotion" });
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
  });

  it("is asked for by the analyst, approved by the approver with a comment, and voided by a newer version", async () => {
    const open = async (browser: TestBrowser) => {
      await browser.page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
      await browser.page.getByTestId("tab-audit").click();
      await browser.page.getByTestId("promotion-panel").waitFor();
    };
    await open(analyst);
    await analyst.page.getByTestId("promotion-reason").fill("two weeks in shadow, no false positives");
    await analyst.page.getByTestId("promotion-request").click();
    const mine = analyst.page.locator('[data-status="pending"]');
    await mine.waitFor({ timeout: 20_000 });
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
});
