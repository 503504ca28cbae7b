// Versions, diff and dry run, driven in Chromium: a pipeline created through the API gets v1, a
// parameter change becomes v2; the diff shows the changed node highlighted and the param change
// listed; a dry run on an uploaded JSON-lines sample (through a real runner) raises the expected
// alerts, with counts on the canvas and the sample records behind each alert. The expression
// editors: Monaco's CEL with the engine's markers and field completion, and process.custom in
// TypeScript with the context API's types.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, launchBrowser, startRunner, startWebApp, type TestBrowser, type TestRunner, type WebApp } from "./support";


function velocityRule(name: string, threshold: number): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    description: "Card testing: several payments of one card within a minute.",
    nodes: [
      { id: "payments", type: "source.kafka", label: "Payments", params: { topic: "payments", timestampField: "ts", maxOutOfOrdernessMs: "5s", fields: ["txId", "cardId", "amount", "country", "ts"] }, position: { x: 0, y: 80 } },
      { id: "byCard", type: "keyBy", label: "By card", params: { field: "cardId" }, position: { x: 300, y: 80 } },
      { id: "vel", type: "velocity", label: "Card testing", params: { threshold, windowMs: "1m", idField: "txId" }, position: { x: 600, y: 80 } },
      { id: "alerts", type: "sink.kafka", label: "Alerts", params: { topic: "velocity-alerts" }, position: { x: 900, y: 0 } },
      { id: "late", type: "sink.kafka", label: "Late payments", params: { topic: "payments-late" }, position: { x: 900, y: 200 } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "alerts" },
      { from: "vel:late", to: "late" },
    ],
  };
}

const t0 = Date.parse("2026-06-01T09:00:00Z");
const pay = (txId: string, cardId: string, seconds: number, amount = 20) => JSON.stringify({ txId, cardId, amount, country: "SA", ts: t0 + seconds * 1000 });
/** With threshold 2 in a minute: card A's 2nd and 3rd payments alert, B and C never do. */
const SAMPLE = [pay("a1", "A", 0), pay("b1", "B", 5), pay("a2", "A", 10), pay("c1", "C", 20), pay("a3", "A", 30), "this line is not JSON", pay("c2", "C", 400)].join("\n") + "\n";
const EXPECTED_ALERTS = 2;

describe("versions, diff and dry run", () => {
  let app: WebApp;
  let runner: TestRunner;
  let browser: TestBrowser;
  const name = `e2e-versions-${Date.now().toString(36)}`;
  let pipelineId = "";
  const sampleFile = path.join(os.tmpdir(), `${name}.jsonl`);

  beforeAll(async () => {
    fs.writeFileSync(sampleFile, SAMPLE);
    runner = await startRunner("versions");
    app = await startWebApp({ name: "versions", env: { RUNNER_URL: runner.url } });
    browser = await launchBrowser();
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("versions-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`), ...browser.consoleWarnings.map((m) => `warning: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
    await runner?.stop();
    fs.rmSync(sampleFile, { force: true });
  });

  it("saves v1, then v2 with a changed parameter, and shows the change in the diff", async () => {
    const api = apiClient(app.url, "alice");
    const created = await api.pipeline.create.mutate({ name, graph: velocityRule(name, 3) });
    pipelineId = created.id;
    const v1 = await api.pipeline.saveVersion.mutate({ pipelineId, graph: velocityRule(name, 3), message: "velocity: 3 payments a minute" });
    expect(v1.version.number).toBe(1);
    await api.pipeline.saveDraft.mutate({ pipelineId, graph: velocityRule(name, 2) });
    const v2 = await api.pipeline.saveVersion.mutate({ pipelineId, graph: velocityRule(name, 2), message: "lower the threshold to 2" });
    expect(v2.version.number).toBe(2);

    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("node-vel").waitFor({ state: "visible" });

    // The history lists both versions with author and message.
    await page.getByTestId("tab-history").click();
    const history = page.getByTestId("version-history");
    await history.waitFor({ state: "visible" });
    await expect.poll(() => history.getByTestId("version-row-2").textContent()).toContain("lower the threshold to 2");
    expect(await history.getByTestId("version-row-1").textContent()).toContain("alice");
    expect(await history.getByTestId("version-row-1").textContent()).toContain("velocity: 3 payments a minute");
    expect(await page.getByTestId("deploy-button").textContent()).toBe("Deploy (first deployment)");

    // v1 → v2: the velocity node is changed (amber), the others unchanged; threshold 3 → 2 is listed.
    await history.getByTestId("version-changes-2").click();
    const dialog = page.getByTestId("diff-dialog");
    await dialog.waitFor({ state: "visible" });
    const diffView = dialog.getByTestId("diff-view");
    await diffView.locator('.react-flow__node[data-id="vel"]').waitFor({ state: "visible" });
    expect(await diffView.locator('.react-flow__node[data-id="vel"]').getAttribute("class")).toContain("kf-diff--changed");
    for (const unchanged of ["payments", "byCard", "alerts", "late"]) {
      expect(await diffView.locator(`.react-flow__node[data-id="${unchanged}"]`).getAttribute("class")).toContain("kf-diff--unchanged");
    }
    expect(await diffView.locator(".react-flow__node.kf-diff--changed").count()).toBe(1);
    const change = dialog.getByTestId("diff-change-vel-threshold");
    await change.waitFor({ state: "visible" });
    expect((await change.locator("td").allTextContents()).map((t) => t.trim())).toEqual(["threshold", "3", "2"]);
    expect(await dialog.getByTestId("diff-summary").textContent()).toBe("1 change");
    // The node's own box is amber-outlined (tools.css), not just classed.
    const outline = await diffView.locator('.react-flow__node[data-id="vel"] .kf-node').evaluate((el) => getComputedStyle(el).outlineColor);
    expect(outline).toBe("rgb(251, 191, 36)");
    await page.screenshot({ path: artifactPath("versions-diff.png") });

    // Compare any two: v2 against the draft (the same graph) has no changes.
    await dialog.getByTestId("diff-from").selectOption("2");
    await dialog.getByTestId("diff-to").selectOption("draft");
    await expect.poll(() => dialog.getByTestId("diff-summary").textContent()).toBe("no changes");
    await dialog.getByTestId("diff-close").click();
    await dialog.waitFor({ state: "detached" });

    // v1 goes live: the canvas (the draft, = v2) marks what changed since, and the deploy button counts it.
    await api.deployment.deploy.mutate({ versionId: v1.version.id });
    await page.reload({ waitUntil: "domcontentloaded" });
    await page.getByTestId("node-vel").getByTestId("node-changed").waitFor({ state: "visible" });
    expect(await page.getByTestId("node-vel").getByTestId("node-changed").textContent()).toBe("changed since v1");
    for (const unchanged of ["payments", "byCard", "alerts", "late"]) expect(await page.getByTestId(`node-${unchanged}`).getByTestId("node-changed").count()).toBe(0);
    await page.getByTestId("tab-history").click();
    await expect.poll(() => page.getByTestId("deploy-button").textContent()).toBe("Deploy (1 change)");
    expect(await page.getByTestId("version-row-1").textContent()).toContain("deployed");
    await page.screenshot({ path: artifactPath("versions-deploy-plan.png") });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });

  it("dry-runs the draft on an uploaded JSON-lines sample: alerts, their evidence, counts on the canvas", async () => {
    const { page } = browser;
    await page.getByTestId("tab-dryrun").click();
    const panel = page.getByTestId("dryrun-panel");
    await panel.waitFor({ state: "visible" });
    await panel.getByTestId("dryrun-file").setInputFiles(sampleFile);
    await expect.poll(() => panel.getByTestId("dryrun-file-summary").textContent()).toContain("7 records");
    await panel.getByTestId("dryrun-run").click();

    const count = panel.getByTestId("dryrun-alert-count");
    await count.waitFor({ state: "visible", timeout: 60_000 });
    expect(Number(await count.textContent())).toBe(EXPECTED_ALERTS);
    expect(Number(await panel.getByTestId("dryrun-deadletter-count").textContent())).toBe(1);

    // Counts on the canvas, per node and port.
    const velOut = page.getByTestId("node-vel").getByTestId("dryrun-count-vel-out");
    await velOut.waitFor({ state: "visible" });
    expect(await velOut.textContent()).toMatch(/out\s*2$/);
    expect(await page.getByTestId("node-payments").getByTestId("dryrun-count-payments-out").textContent()).toMatch(/out\s*6$/);
    expect(await page.getByTestId("node-alerts").getByTestId("dryrun-count-alerts-in").textContent()).toMatch(/in\s*2$/);

    // A click on a count shows that port's records.
    await velOut.click();
    const records = panel.getByTestId("dryrun-records");
    await records.waitFor({ state: "visible" });
    expect(await records.locator("tbody tr").count()).toBe(EXPECTED_ALERTS);

    // Each alert lists the sample records that caused it (the operator's evidence), with their line numbers.
    const first = panel.getByTestId("dryrun-alert-0");
    await first.locator("summary").click();
    const evidence = first.getByTestId("dryrun-evidence-0");
    await evidence.waitFor({ state: "visible" });
    const evidenceText = await evidence.textContent();
    expect(evidenceText).toContain("a1");
    expect(evidenceText).toContain("a2");
    expect(await evidence.locator("tbody tr").count()).toBe(2);
    await page.screenshot({ path: artifactPath("versions-dryrun.png") });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });

  it("edits a CEL expression in Monaco with field completion and the engine's inline errors", async () => {
    const api = apiClient(app.url);
    const celName = `${name}-cel`;
    const doc: PipelineDocumentInput = {
      format: PIPELINE_FORMAT,
      name: celName,
      nodes: [
        { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts", fields: ["txId", "cardId", "amount", "country", "ts"] }, position: { x: 0, y: 0 } },
        { id: "large", type: "filter", params: { expression: "amount > 1000" }, position: { x: 300, y: 0 } },
        { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 600, y: 0 } },
      ],
      edges: [
        { from: "payments", to: "large" },
        { from: "large", to: "alerts" },
      ],
    };
    const { id } = await api.pipeline.create.mutate({ name: celName, graph: doc });
    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${id}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("node-large").click();
    const cel = page.getByTestId("cel-expression");
    await cel.locator(".monaco-editor .view-lines").waitFor({ state: "visible" });
    await expect.poll(async () => ((await cel.locator(".view-lines").textContent()) ?? "").replace(/\u00a0/g, " ")).toBe("amount > 1000");
    // Syntax colours from the CEL tokenizer: the field and the number are separate tokens.
    await expect.poll(() => cel.locator(".view-lines span span").count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);

    // Type an unknown field: the engine's checker marks it inline (a squiggle) and names the near one.
    await cel.locator(".view-lines").click();
    await page.keyboard.press("End");
    await page.keyboard.type(" && contry");
    await page.keyboard.press("Escape");
    await expect.poll(async () => ((await cel.locator(".view-lines").textContent()) ?? "").replace(/\u00a0/g, " ")).toBe("amount > 1000 && contry");
    await cel.locator(".squiggly-error").first().waitFor({ state: "attached" });
    // The draft took the edit: the validator (same checker) reports the unknown field on the node.
    await expect.poll(() => page.getByTestId("param-error-expression").first().textContent(), { timeout: 10_000 }).toContain('unknown field "contry"');
    // Completion offers the declared fields. The validation round trip above re-renders the
    // inspector, so focus the editor again (as a person would) and ask until the list shows.
    const suggest = page.locator(".suggest-widget .monaco-list-row");
    await expect
      .poll(
        async () => {
          await cel.locator(".view-lines").click();
          await page.keyboard.press("End");
          await page.keyboard.press("Control+Space");
          return suggest.first().isVisible();
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toBe(true);
    const labels = await suggest.allTextContents();
    expect(labels.join(" ")).toContain("country");
    await page.screenshot({ path: artifactPath("versions-cel.png") });
    await page.keyboard.press("Escape");

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });

  it("edits process.custom code in Monaco's TypeScript with the context API's types", async () => {
    const api = apiClient(app.url);
    const tsName = `${name}-custom`;
    const { id } = await api.pipeline.create.mutate({
      name: tsName,
      graph: {
        format: PIPELINE_FORMAT,
        name: tsName,
        nodes: [
          { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" }, position: { x: 0, y: 0 } },
          { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 300, y: 0 } },
          { id: "custom", type: "process.custom", params: {}, position: { x: 600, y: 0 } },
          { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 900, y: 0 } },
        ],
        edges: [
          { from: "payments", to: "byCard" },
          { from: "byCard", to: "custom" },
          { from: "custom", to: "alerts" },
        ],
      },
    });
    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${id}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("node-custom").click();
    const code = page.getByTestId("code-custom");
    await code.locator(".monaco-editor .view-lines").waitFor({ state: "visible" });
    // The template (the param's default) type-checks against the context API: no error squiggle.
    await expect.poll(async () => (await code.locator(".view-lines").textContent()) ?? "").toContain("processElement");
    await page.waitForTimeout(1_500);
    expect(await code.locator(".squiggly-error").count()).toBe(0);

    // A call the API does not have is a type error, as in an IDE.
    await code.locator(".view-lines").click();
    await page.keyboard.press("Control+A");
    await page.keyboard.insertText('export function processElement(record: InputRecord, ctx: Context): void {\n  ctx.sideOutput("nope", record.value);\n  ctx.');
    await code.locator(".squiggly-error").first().waitFor({ state: "attached", timeout: 30_000 });
    // Completion lists the context's members.
    await page.keyboard.press("Control+Space");
    const suggest = code.locator(".suggest-widget .monaco-list-row");
    await suggest.first().waitFor({ state: "visible" });
    const labels = (await suggest.allTextContents()).join(" ");
    expect(labels).toContain("sideOutput");
    expect(labels).toContain("state");
    await page.screenshot({ path: artifactPath("versions-custom-code.png") });
    await page.keyboard.press("Escape");
    // The language service runs in its own worker, from the app's origin.
    expect(page.workers().some((w) => w.url().startsWith(app.url))).toBe(true);

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
  it("creates a pipeline from a template, exports it, and imports the file as a new pipeline", async () => {
    const { page } = browser;
    const fromTemplate = `${name}-tpl`;
    await page.getByTestId("new-from-template").click();
    const templates = page.getByTestId("template-dialog");
    await templates.getByTestId("template-velocity-check").click();
    await templates.getByTestId("template-name").fill(fromTemplate);
    await templates.getByTestId("template-create").click();
    await expect.poll(() => page.getByTestId("pipeline-title").textContent()).toBe(fromTemplate);
    await page.getByTestId("node-velocity").waitFor({ state: "visible" });
    await expect.poll(() => page.getByTestId("problems-summary").textContent()).not.toContain("error");

    // Export the draft as a keyflow.pipeline/v1 file.
    await page.getByTestId("tab-history").click();
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-pipeline").click()]);
    expect(download.suggestedFilename()).toBe(`${fromTemplate}-draft.keyflow.json`);
    const exported = path.join(os.tmpdir(), download.suggestedFilename());
    await download.saveAs(exported);
    const doc = JSON.parse(fs.readFileSync(exported, "utf8")) as { format: string; name: string; nodes: { id: string }[] };
    expect(doc.format).toBe(PIPELINE_FORMAT);
    expect(doc.name).toBe(fromTemplate);

    // Import it back under another name: validated in the browser first, then a new pipeline's draft.
    const imported = `${name}-imported`;
    await page.getByTestId("import-pipeline").click();
    const dialog = page.getByTestId("import-dialog");
    await dialog.getByTestId("import-file").setInputFiles(exported);
    await expect.poll(() => dialog.getByTestId("import-verdict").textContent()).toBe("valid");
    await dialog.getByTestId("import-name").fill(imported);
    await dialog.getByTestId("import-create").click();
    await expect.poll(() => page.getByTestId("pipeline-title").textContent()).toBe(imported);
    for (const node of doc.nodes) await page.getByTestId(`node-${node.id}`).waitFor({ state: "visible" });

    // A file that is not a pipeline is refused with the reason, and nothing is stored.
    const notAPipeline = path.join(os.tmpdir(), `${name}-not-a-pipeline.json`);
    fs.writeFileSync(notAPipeline, JSON.stringify({ nodes: [] }));
    await page.getByTestId("import-pipeline").click();
    await page.getByTestId("import-dialog").getByTestId("import-file").setInputFiles(notAPipeline);
    await expect.poll(() => page.getByTestId("import-problem").textContent()).toContain('"format" must be "keyflow.pipeline/v1"');
    await page.screenshot({ path: artifactPath("versions-import.png") });
    await page.keyboard.press("Escape");
    fs.rmSync(exported, { force: true });
    fs.rmSync(notAPipeline, { force: true });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
