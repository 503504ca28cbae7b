// The Foundation's e2e: a pipeline created through the API appears on the canvas, node by node and
// edge by edge, its document renders in Monaco, and nothing is fetched from outside localhost.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipelineDocumentSchema, type PipelineDocument } from "@keyflow/operators";
import { apiClient, artifactPath, launchBrowser, startWebApp, type TestBrowser, type WebApp } from "./support";

const scenarioFile = path.join(path.dirname(fileURLToPath(import.meta.url)), "scenarios", "large-payments.pipeline.json");

function loadScenario(name: string): PipelineDocument {
  const doc = pipelineDocumentSchema.parse(JSON.parse(fs.readFileSync(scenarioFile, "utf8")));
  return { ...doc, name };
}

describe("canvas: a pipeline created through the API", () => {
  let app: WebApp;
  let browser: TestBrowser;
  const name = `e2e-canvas-${Date.now().toString(36)}`;
  const doc = loadScenario(name);

  beforeAll(async () => {
    app = await startWebApp({ name: "canvas" });
    browser = await launchBrowser();
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("canvas-browser.log"), [...browser.consoleErrors.map((m) => `error: ${m}`), ...browser.consoleWarnings.map((m) => `warning: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
  });

  it("draws every node and edge of the newest version, shows its JSON in Monaco, and loads nothing from outside", async () => {
    const api = apiClient(app.url);
    const pipeline = await api.pipeline.create.mutate({ name, description: doc.description, graph: doc });
    const saved = await api.pipeline.saveVersion.mutate({ pipelineId: pipeline.id, graph: doc, message: "first cut" });
    expect(saved.version.number).toBe(1);

    const { page } = browser;
    await page.goto(app.url, { waitUntil: "domcontentloaded" });
    await page.getByTestId(`pipeline-item-${name}`).click();
    await expect.poll(() => page.url()).toContain(`pipeline=${pipeline.id}`);

    for (const node of doc.nodes) {
      await page.getByTestId(`node-${node.id}`).waitFor({ state: "visible" });
    }
    expect(await page.locator(".react-flow__node").count()).toBe(doc.nodes.length);
    await expect.poll(() => page.getByTestId("node-large").textContent()).toContain("Filter");

    for (const edge of doc.edges) {
      await page.locator(`.react-flow__edge[data-id="${edge.from}->${edge.to}"] path.react-flow__edge-path`).waitFor({ state: "attached" });
    }
    expect(await page.locator(".react-flow__edge").count()).toBe(doc.edges.length);
    // The side output has its own handle, and its edge is drawn as one.
    await page.getByTestId("node-large").locator('.react-flow__handle[data-handleid="errors"]').waitFor({ state: "attached" });
    expect(await page.locator('.react-flow__edge[data-id="large:errors->unreadable"]').getAttribute("class")).toContain("kf-edge-side");

    // Monaco, from the local package: the version's document, read-only.
    const editor = page.getByTestId("document-editor").locator(".monaco-editor .view-lines");
    await editor.waitFor({ state: "visible" });
    await expect.poll(async () => (await editor.textContent())?.replace(/\u00a0/g, " ") ?? "").toContain('"format": "keyflow.pipeline/v1"');
    // Its language service runs in a web worker bundled with the app (not on the main thread, not from a CDN).
    await expect.poll(() => page.workers().map((w) => w.url())).toContainEqual(expect.stringMatching(new RegExp(`^${app.url}/`)));

    // The shared validator runs in the browser too: this version has no errors.
    await expect.poll(() => page.getByTestId("problems-summary").textContent()).not.toContain("error");

    await page.screenshot({ path: artifactPath("canvas.png") });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
    expect(browser.consoleErrors).toEqual([]);
  });

  it("shows a draft without versions with the validator's errors pinned on its nodes", async () => {
    const api = apiClient(app.url);
    const draftName = `${name}-draft`;
    const broken: PipelineDocument = {
      ...doc,
      name: draftName,
      nodes: doc.nodes.map((n) => (n.id === "large" ? { ...n, params: { expression: "amount >" } } : n)),
    };
    const pipeline = await api.pipeline.create.mutate({ name: draftName, graph: broken });

    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipeline.id}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("node-large").getByTestId("node-issues").waitFor({ state: "visible" });
    expect(await page.getByTestId("node-large").getByTestId("node-issues").textContent()).toMatch(/^\d+ errors?$/);
    expect(await page.getByTestId("node-payments").getByTestId("node-issues").count()).toBe(0);
    expect(await page.getByTestId("version-select").inputValue()).toBe("draft");

    await page.getByTestId("problems-summary").click();
    const problem = page.getByTestId("problems-list").getByRole("button", { name: /node "large"/ }).first();
    await problem.click();
    await expect.poll(() => page.locator('.react-flow__node.selected[data-id="large"]').count()).toBe(1);
    await page.screenshot({ path: artifactPath("canvas-draft-errors.png") });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
