// Job controls from the Operations tab, in Chromium against a real runner (`keyflow serve`): on a
// pipeline on the demo source (keyBy card → velocity → file sink), take a savepoint and see its
// folder; change parallelism 1 → 2 through a savepoint and see the job running again with two
// subtasks in the Skew panel; restore from a kept checkpoint; a restore from the savepoint of
// another pipeline, refused to the analyst (not one of the job's own savepoints; picking another
// job's is an approver's explicit choice) and, picked by an approver, refused by the runner naming
// the node whose state does not fit, after which the job runs again from its own savepoint. Once a
// version enforces, the analyst's stop and restore buttons are disabled with the server's reason.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, launchBrowser, startRunner, startWebApp, type ApiClient, type TestBrowser, type TestRunner, type WebApp } from "./support";

function pipeline(name: string, velocityId: string): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    description: "Demo payments through a velocity rule, for the job controls.",
    // Checkpoints every 2 s, five kept: a restore picks one that is still on disk.
    settings: { checkpointIntervalMs: 2000, retainedCheckpoints: 5, maxParallelism: 16 },
    nodes: [
      { id: "payments", type: "source.demo", label: "Demo payments", params: { eventsPerSecond: 200, seed: 7, cardCount: 300, maxOutOfOrdernessMs: 2000 }, position: { x: 0, y: 80 } },
      { id: "byCard", type: "keyBy", label: "By card", params: { field: "cardId" }, position: { x: 300, y: 80 } },
      { id: velocityId, type: "velocity", label: "Card testing", params: { threshold: 3, windowMs: "1m", idField: "txId" }, position: { x: 600, y: 80 } },
      { id: "alerts", type: "sink.file", label: "Alerts", params: { path: `${name}/alerts.jsonl` }, position: { x: 900, y: 80 } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: velocityId },
      { from: velocityId, to: "alerts" },
    ],
  };
}

describe("job controls in the Operations tab", () => {
  let app: WebApp;
  let runner: TestRunner;
  let browser: TestBrowser;
  let api: ApiClient;
  const name = `e2e-jobs-${Date.now().toString(36)}`;
  let pipelineId = "";

  beforeAll(async () => {
    runner = await startRunner("job-controls");
    app = await startWebApp({ name: "job-controls", env: { RUNNER_URL: runner.url } });
    browser = await launchBrowser({ viewport: { width: 1600, height: 1100 } });
    api = apiClient(app.url, "operator");
    const created = await api.pipeline.create.mutate({ name, graph: pipeline(name, "vel") });
    pipelineId = created.id;
    const saved = await api.pipeline.saveVersion.mutate({ pipelineId, graph: pipeline(name, "vel"), message: "job controls" });
    const deployment = await api.deployment.deploy.mutate({ versionId: saved.version.id });
    expect(deployment.status).toBe("running");
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("job-controls-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`), ...browser.consoleWarnings.map((m) => `warning: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
    await runner?.stop();
  });

  /** Starts a control with `click` and waits for it (a new run on the panel) to settle; its status. */
  async function control(kind: string, click: () => Promise<void>): Promise<string> {
    const progress = browser.page.getByTestId("job-control-progress");
    const before = (await progress.count()) > 0 ? await progress.getAttribute("data-run") : null;
    await click();
    const state = async () => `${await progress.getAttribute("data-run").catch(() => "")}|${await progress.getAttribute("data-kind").catch(() => "")}:${await progress.getAttribute("data-status").catch(() => "")}`;
    await expect.poll(state, { timeout: 120_000 }).toMatch(new RegExp(`^(?!${before ?? "-"}\\|)[^|]+\\|${kind}:(succeeded|failed)$`));
    return (await progress.getAttribute("data-status")) ?? "";
  }

  /** Reloads the page on the Operations tab (after a change made from another session). */
  async function reopenOperations() {
    await browser.page.reload({ waitUntil: "domcontentloaded" });
    await browser.page.getByTestId("live-payments").waitFor({ state: "visible", timeout: 30_000 });
    await browser.page.getByTestId("tab-operations").click();
  }

  /** Waits for the panel to show `deploymentId` (a restore remounts it on the new deployment once the pipeline is refetched). */
  async function showing(text: string | null) {
    const id = /deployment (\S+?)(?: is running)?$/.exec(text?.trim() ?? "")?.[1];
    expect(id).toBeDefined();
    await browser.page.locator(`[data-testid="operations-panel"] code[title="${id ?? ""}"]`).waitFor({ state: "visible", timeout: 30_000 });
    await browser.page.getByTestId("live-payments").waitFor({ state: "visible", timeout: 30_000 });
  }

  it("takes a savepoint and shows its folder; the job keeps running", async () => {
    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("live-payments").waitFor({ state: "visible", timeout: 30_000 });
    await page.getByTestId("tab-operations").click();
    await expect.poll(async () => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");
    expect(await page.getByTestId("job-parallelism").textContent()).toMatch(/now 1 \(max 16\)/);

    expect(await control("savepoint", () => page.getByTestId("job-savepoint").click())).toBe("succeeded");
    const result = (await page.getByTestId("job-control-result").textContent()) ?? "";
    expect(result).toMatch(/^savepoint written: \/.+\/savepoint-[^/]+$/);
    // The folder is on the runner's disk (the runner here shares this machine).
    expect(fs.existsSync(result.replace("savepoint written: ", ""))).toBe(true);
    expect(await page.getByTestId("job-status").textContent()).toBe("running");
    await page.getByTestId("job-control-progress").scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("job-controls-savepoint.png") });
  });

  it("changes parallelism 1 → 2 through a savepoint; the Skew panel then lists two subtasks", async () => {
    const { page } = browser;
    await page.getByTestId("rescale-parallelism").fill("2");
    page.once("dialog", (dialog) => void dialog.accept());
    const status = control("rescale", async () => {
      await page.getByTestId("job-rescale").click();
      // While it runs, the controls are disabled.
      await expect.poll(() => page.getByTestId("job-savepoint").isDisabled(), { timeout: 10_000 }).toBe(true);
    });
    expect(await status).toBe("succeeded");
    const steps = (await page.getByTestId("job-control-steps").textContent()) ?? "";
    expect(steps).toMatch(/stopping deployment \S+ with a savepoint/);
    expect(steps).toMatch(/savepoint written: \/\S+savepoint-/);
    expect(steps).toMatch(/job stopped/);
    const rescaled = await page.getByTestId("job-control-result").textContent();
    expect(rescaled).toMatch(/^restored at parallelism 2 from the savepoint: deployment \S+ is running$/);
    await showing(rescaled);

    // The new deployment is live on the canvas and in the panel, at parallelism 2.
    await expect.poll(async () => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");
    await expect.poll(async () => page.getByTestId("job-parallelism").textContent(), { timeout: 30_000 }).toMatch(/now 2/);
    await expect.poll(() => page.getByTestId("job-savepoint").isDisabled(), { timeout: 10_000 }).toBe(false);
    const skew = page.getByTestId("skew-panel");
    const operator = skew.locator("[data-skewed]").first();
    await operator.waitFor({ state: "visible", timeout: 60_000 });
    const node = ((await operator.getAttribute("data-testid")) ?? "").replace(/^skew-/, "");
    // The deployment's own node ids (its version's), not the rule job's namespaced `v<N>-<id>`.
    expect(["byCard", "vel"]).toContain(node);
    await page.getByTestId(`skew-${node}-subtask-1`).waitFor({ state: "visible", timeout: 30_000 });
    expect(await operator.locator(`[data-testid^="skew-${node}-subtask-"]`).count()).toBe(2);
    expect(await operator.textContent()).toMatch(/2 subtasks/);
    // The hottest cards (the demo's Zipf-like activity) are listed. No flag: at parallelism 2 a
    // subtask cannot carry more than twice the mean (that would be more than all the records).
    await expect.poll(() => operator.getByRole("table", { name: `hottest keys of ${node}` }).locator("tbody tr").count(), { timeout: 30_000 }).toBeGreaterThan(0);
    expect(await operator.getAttribute("data-skewed")).toBe("no");
    await skew.scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("job-controls-rescaled.png") });
  });

  it("restores from a kept checkpoint", async () => {
    const { page } = browser;
    // The new deployment's own checkpoints (every 2 s) become restore candidates.
    const source = page.getByTestId("restore-source");
    await expect.poll(async () => ((await source.inputValue()) ?? "").startsWith("checkpoint:"), { timeout: 60_000 }).toBe(true);
    const checkpoint = (await source.inputValue()).slice("checkpoint:".length);
    await source.selectOption(`checkpoint:${checkpoint}`);
    page.once("dialog", (dialog) => void dialog.accept());
    expect(await control("restore", () => page.getByTestId("job-restore").click())).toBe("succeeded");
    const restored = await page.getByTestId("job-control-result").textContent();
    expect(restored).toMatch(new RegExp(`^restored at parallelism 2 from checkpoint ${checkpoint}: deployment \\S+ is running$`));
    await showing(restored);
    await expect.poll(async () => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");
    await expect.poll(async () => page.getByTestId("job-parallelism").textContent(), { timeout: 30_000 }).toMatch(/now 2/);
    await page.getByTestId("job-control-progress").scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("job-controls-restored.png") });
  });

  it("refuses the analyst another job's savepoint; an approver's explicit pick is refused by the runner, naming the node, and the job runs again from its own savepoint", async () => {
    const { page } = browser;
    // Another pipeline whose velocity node is called "risk": its savepoint has state this one lacks.
    const other = `${name}-other`;
    const created = await api.pipeline.create.mutate({ name: other, graph: pipeline(other, "risk") });
    const saved = await api.pipeline.saveVersion.mutate({ pipelineId: created.id, graph: pipeline(other, "risk"), message: "other" });
    const deployment = await api.deployment.deploy.mutate({ versionId: saved.version.id });
    await expect.poll(async () => (await api.deployment.checkpoints.query({ deploymentId: deployment.id })).jobStatus, { timeout: 30_000 }).toBe("running");
    const { path: foreign } = await api.deployment.savepoint.mutate({ deploymentId: deployment.id });
    await api.deployment.stop.mutate({ deploymentId: deployment.id });

    await page.getByTestId("restore-source").selectOption("path");
    await page.getByTestId("restore-path").fill(foreign);
    // Not one of this job's own savepoints: refused before the job is touched.
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByTestId("job-restore").click();
    await expect.poll(async () => (await page.getByTestId("job-control-call-error").textContent().catch(() => "")) ?? "", { timeout: 20_000 }).toContain(`${foreign} is not a savepoint of rule job`);
    // Another job's savepoint is an approver's explicit choice: the analyst's box is disabled, with the reason.
    expect(await page.getByTestId("restore-another-job").isDisabled()).toBe(true);
    expect(await page.getByTestId("restore-another-job").locator("xpath=..").getAttribute("title")).toBe("restoring from another job's savepoint needs the approver role");
    const current = await page.locator('[data-testid="operations-panel"] h3 code').getAttribute("title");
    const approver = apiClient(app.url, "pat", "approver");
    expect(
      await control("restore", async () => {
        await approver.deployment.restore.mutate({ deploymentId: current ?? "", from: { savepointPath: foreign, anotherJob: true }, reason: "the other rule's state" }).catch(() => undefined);
      }),
    ).toBe("failed");
    // The approver acted from another session: this tab learns of the redeployed job on a reload.
    await reopenOperations();
    const error = (await page.getByTestId("job-control-error").textContent()) ?? "";
    expect(error).toMatch(/does not fit the pipeline/);
    expect(error).toMatch(/node "risk" \(velocity\) has state in/);
    const steps = (await page.getByTestId("job-control-steps").textContent()) ?? "";
    expect(steps).toMatch(/going back: deploying from the savepoint at parallelism 2/);
    const back = (await page.getByTestId("job-control-steps").locator("li").allTextContents()).find((li) => /running again from the savepoint/.test(li)) ?? null;
    expect(back).not.toBeNull();
    await showing(back);
    await expect.poll(async () => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");
    await page.getByTestId("job-control-progress").scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("job-controls-refused.png") });
    expect(browser.pageErrors).toEqual([]);
  });

  it("disables the analyst's stop and restore once a version enforces, showing the server's reason", async () => {
    const { page } = browser;
    const versionId = (await api.pipeline.get.query({ id: pipelineId })).versions[0]?.id ?? "";
    const approver = apiClient(app.url, "pat", "approver");
    const asked = await api.promotion.request.mutate({ versionId, reason: "e2e: the rule enforces now" });
    await approver.promotion.approve.mutate({ requestId: asked.id, comment: "ok" });
    const enforcing = await approver.deployment.deploy.mutate({ versionId, mode: "enforcing", reason: "e2e" });
    await reopenOperations();
    await page.locator(`[data-testid="operations-panel"] code[title="${enforcing.id}"]`).waitFor({ state: "visible", timeout: 60_000 });
    const stop = page.getByTestId("job-stop");
    await expect.poll(() => stop.isDisabled(), { timeout: 30_000 }).toBe(true);
    const reason = /^Stop needs the approver role: rule job rule-\S+ has an enforcing branch \(version 1\)$/;
    expect(await stop.getAttribute("title")).toMatch(reason);
    expect(await page.getByTestId("job-stop-denied").textContent()).toMatch(reason);
    expect(await page.getByTestId("job-restore").isDisabled()).toBe(true);
    expect(await page.getByTestId("job-restore").getAttribute("title")).toMatch(/^Restore needs the approver role: rule job/);
    expect(await page.getByTestId("job-savepoint").isDisabled()).toBe(false);
    await page.getByTestId("job-stop").scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("job-controls-enforcing-analyst.png") });
    expect(browser.pageErrors).toEqual([]);
  });
});
