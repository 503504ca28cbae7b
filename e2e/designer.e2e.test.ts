// The designer, driven as an analyst would (issue 5, "Building a graph" and "Validation on every
// edit"): from an empty canvas, drag a source, a velocity rule and a sink from the palette, set
// their params in the inspector, try to connect the source straight to the rule (refused: it needs
// a keyBy) and see the error; add the keyBy and see the errors clear; save a version, reload and
// find it; then add and connect a node with the keyboard only, undo, redo, copy and paste.
// The steps' data is e2e/scenarios/velocity-rule.designer.json; screenshots go to e2e/artifacts/.
//
// KEYFLOW_E2E_URL=http://localhost:3000 runs it against a server already running (`npm run dev`).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import { apiClient, artifactPath, launchBrowser, startWebApp, type TestBrowser, type WebApp } from "./support";

type Port = [node: string, port: string];
interface NodeStep {
  type: string;
  id: string;
  /**
   * Where to drop it: pixels from the canvas's top-left corner, or between two nodes already on the
   * canvas (halfway across, `below` pixels under the lower one), whatever the zoom.
   */
  drop: [number, number] | { between: [string, string]; below: number };
  params: Record<string, string>;
}
interface Scenario {
  pipeline: string;
  nodes: NodeStep[];
  duration: { node: string; param: string; wrong: string; error: string; right: string; hint: string };
  /** Label and notes given to the duration's node. */
  label: { text: string; notes: string };
  refused: { from: Port; to: Port; reason: string };
  edgesBeforeKeyBy: [Port, Port][];
  keyBy: NodeStep;
  edgesWithKeyBy: [Port, Port][];
  version: { message: string };
  keyboard: { search: string; adds: { type: string; id: string }; connectFilter: string; edge: string; params: Record<string, string>; pasted: string };
}

const scenario: Scenario = JSON.parse(fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "scenarios", "velocity-rule.designer.json"), "utf8"));

/** The document's spelling of an edge (main ports implicit), as React Flow edge ids use it. */
const edgeId = ([from, fromPort]: Port, [to, toPort]: Port) => `${fromPort === "out" ? from : `${from}:${fromPort}`}->${toPort === "in" ? to : `${to}:${toPort}`}`;
const edgeLocator = (page: Page, id: string) => page.locator(`.react-flow__edge[data-id="${id}"]`);

let step = 0;
async function shot(page: Page, name: string) {
  step += 1;
  await page.screenshot({ path: artifactPath(`designer-${String(step).padStart(2, "0")}-${name}.png`) });
}

async function center(locator: Locator): Promise<{ x: number; y: number }> {
  const box = await locator.boundingBox();
  if (!box) throw new Error(`not visible: ${locator.toString()}`);
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

async function dropPoint(page: Page, drop: NodeStep["drop"]): Promise<{ x: number; y: number }> {
  if (Array.isArray(drop)) return { x: drop[0], y: drop[1] };
  const canvas = await page.getByTestId("canvas").boundingBox();
  const [a, b] = await Promise.all(drop.between.map((id) => page.getByTestId(`node-${id}`).boundingBox()));
  if (!canvas || !a || !b) throw new Error(`cannot place a node between ${drop.between.join(" and ")}`);
  const [left, right] = a.x < b.x ? [a, b] : [b, a];
  return { x: (left.x + left.width + right.x) / 2 - canvas.x, y: Math.max(a.y + a.height, b.y + b.height) + drop.below - canvas.y };
}

/** A real drag from the palette (HTML5 drag and drop, driven by the mouse). */
async function dragFromPalette(page: Page, node: NodeStep) {
  const canvas = page.getByTestId("canvas");
  await page.getByTestId(`palette-item-${node.type}`).dragTo(canvas, { targetPosition: await dropPoint(page, node.drop) });
  await page.getByTestId(`node-${node.id}`).waitFor({ state: "visible" });
}

/** Presses the mouse on one handle, moves to the other in steps, releases. Returns the hint shown over the target. */
async function dragConnection(page: Page, [fromNode, fromPort]: Port, [toNode, toPort]: Port): Promise<string> {
  const from = await center(page.getByTestId(`handle-${fromNode}-${fromPort}`));
  const to = await center(page.getByTestId(`handle-${toNode}-${toPort}`));
  await page.mouse.move(from.x, from.y);
  await page.mouse.down();
  await page.mouse.move(from.x + 40, from.y + 20, { steps: 4 });
  await page.mouse.move(to.x, to.y, { steps: 12 });
  const hint = page.getByTestId("connection-hint");
  await hint.waitFor({ state: "visible" });
  const text = (await hint.textContent()) ?? "";
  await page.mouse.up();
  return text;
}

/** Waits until the canvas stops moving (zoom and pan animations last 300 ms). */
async function settle(page: Page) {
  const viewport = page.locator(".react-flow__viewport");
  let last = "";
  await expect
    .poll(async () => {
      await page.waitForTimeout(120);
      const now = (await viewport.getAttribute("style")) ?? "";
      const still = now === last;
      last = now;
      return still;
    })
    .toBe(true);
}

async function selectNode(page: Page, id: string) {
  await page.getByTestId(`node-${id}`).locator(".kf-node__header").click();
  await expect.poll(() => page.getByTestId("inspector-node-id").textContent()).toBe(id);
}

async function setParams(page: Page, node: NodeStep) {
  await selectNode(page, node.id);
  const inspector = page.getByTestId("inspector");
  for (const [param, value] of Object.entries(node.params)) await inspector.getByTestId(`param-${param}`).fill(value);
}

const problemsText = (page: Page) => page.getByTestId("problems-summary").textContent();

describe("designer: building a velocity rule on an empty canvas", () => {
  let app: WebApp | undefined;
  let url: string;
  let browser: TestBrowser;
  const name = `${scenario.pipeline}-${Date.now().toString(36)}`;

  beforeAll(async () => {
    if (process.env.KEYFLOW_E2E_URL) url = process.env.KEYFLOW_E2E_URL;
    else {
      app = await startWebApp({ name: "designer" });
      url = app.url;
    }
    browser = await launchBrowser({ viewport: { width: 1600, height: 900 } });
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("designer-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`), ...browser.consoleWarnings.map((m) => `warning: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
  });

  it("builds the graph from the palette, refuses the connection that cannot work, and saves a version once the keyBy is there", async () => {
    const { page } = browser;
    onTestFailed(() => page.screenshot({ path: artifactPath("designer-failed-build.png") }).then(() => undefined));
    await page.goto(url, { waitUntil: "domcontentloaded" });
    // The palette comes from the catalog query: the app is hydrated and talking to its API.
    await page.getByTestId("palette-item-velocity").waitFor({ state: "visible" });

    // A new, empty pipeline.
    await page.getByTestId("new-pipeline").click();
    await page.getByTestId("new-pipeline-name").fill(name);
    await page.getByTestId("new-pipeline-name").press("Enter");
    await expect.poll(() => page.getByTestId("pipeline-title").textContent()).toBe(name);
    await page.getByTestId("canvas-empty").waitFor({ state: "visible" });
    expect(await page.locator(".react-flow__node").count()).toBe(0);
    await shot(page, "empty-canvas");

    // Hovering a palette entry shows its docs.
    await page.getByTestId("palette-item-velocity").hover();
    await expect.poll(() => page.getByTestId("palette-docs").textContent()).toContain("rolling event-time window");
    await shot(page, "palette-docs");

    // Drag the source, the rule and the sink onto the canvas: readable ids, selected on drop.
    for (const node of scenario.nodes) await dragFromPalette(page, node);
    expect(await page.locator(".react-flow__node").count()).toBe(scenario.nodes.length);
    await shot(page, "dropped");

    // Params, typed into the inspector's generated form. A duration that does not parse says so at once.
    for (const node of scenario.nodes) await setParams(page, node);
    const d = scenario.duration;
    await selectNode(page, d.node);
    const duration = page.getByTestId(`param-${d.param}`);
    await duration.pressSequentially(d.wrong);
    await expect.poll(() => page.getByTestId(`param-error-${d.param}`).first().textContent()).toContain(d.error);
    await shot(page, "duration-error");
    await duration.fill("");
    await duration.pressSequentially(d.right);
    await expect.poll(() => page.getByTestId(`param-${d.param}-hint`).textContent()).toBe(d.hint);
    expect(await page.getByTestId(`param-error-${d.param}`).count()).toBe(0);
    // A label and notes: the node shows the label as its title and marks that it has notes.
    await page.getByTestId("node-label").fill(scenario.label.text);
    await page.getByTestId("inspector").getByTestId("node-notes").fill(scenario.label.notes);
    await expect.poll(() => page.getByTestId(`node-${d.node}`).locator(".kf-node__title").textContent()).toBe(scenario.label.text);
    expect(await page.getByTestId(`node-${d.node}`).getByTestId("node-notes").getAttribute("title")).toBe(scenario.label.notes);

    // Source straight into the rule: refused while dragging, with the validator's reason.
    const hint = await dragConnection(page, scenario.refused.from, scenario.refused.to);
    expect(hint).toContain(scenario.refused.reason);
    await expect.poll(() => page.getByTestId("toast").allTextContents()).toContainEqual(expect.stringContaining(scenario.refused.reason));
    expect(await edgeLocator(page, edgeId(scenario.refused.from, scenario.refused.to)).count()).toBe(0);
    for (const [from, to] of scenario.edgesBeforeKeyBy) {
      expect(await dragConnection(page, from, to)).toContain("Connect");
      await edgeLocator(page, edgeId(from, to)).waitFor({ state: "attached" });
    }

    // So the rule has no input: its error is pinned on it, listed, and saving is refused.
    const rule = page.getByTestId(`node-${scenario.refused.to[0]}`);
    await expect.poll(() => rule.getByTestId("node-issues").getAttribute("data-severity")).toBe("error");
    expect(await problemsText(page)).toMatch(/\d+ errors?/);
    expect(await page.getByTestId("save-version").isDisabled()).toBe(true);
    expect(await page.getByTestId("save-version").getAttribute("title")).toContain("Fix");
    await page.getByTestId("problems-summary").click();
    const missing = page.getByTestId("problems-list").getByRole("button", { name: new RegExp(`node "${scenario.refused.to[0]}": its input is not connected`) });
    await missing.click();
    await expect.poll(() => page.locator(`.react-flow__node.selected[data-id="${scenario.refused.to[0]}"]`).count()).toBe(1);
    // …and zooms onto it (nodes are 224 px wide at zoom 1; a problem zooms to 1.2).
    await settle(page);
    expect((await rule.boundingBox())?.width).toBeGreaterThan(224 * 1.15);
    await shot(page, "keyby-missing");
    // Zoom back out to see the whole graph.
    await page.getByTestId("problems-summary").click();
    await page.getByTestId("fit-view").click();
    await settle(page);

    // Add the keyBy and wire it in: every error clears.
    await dragFromPalette(page, scenario.keyBy);
    await setParams(page, scenario.keyBy);
    for (const [from, to] of scenario.edgesWithKeyBy) {
      expect(await dragConnection(page, from, to)).toContain("Connect");
      await edgeLocator(page, edgeId(from, to)).waitFor({ state: "attached" });
    }
    await expect.poll(() => problemsText(page)).not.toContain("error");
    expect(await rule.getByTestId("node-issues").getAttribute("data-severity").catch(() => null)).not.toBe("error");
    await expect.poll(() => page.getByTestId("save-version").isDisabled()).toBe(false);
    await shot(page, "keyby-added");

    // Save a version with a message.
    await page.getByTestId("save-version").click();
    await page.getByTestId("save-version-message").fill(scenario.version.message);
    await shot(page, "save-version");
    await page.getByTestId("save-version-confirm").click();
    await expect.poll(() => page.getByTestId("toast").allTextContents()).toContainEqual(expect.stringContaining("Saved version v1"));
    await expect.poll(() => page.getByTestId("version-select").locator("option").allTextContents()).toContain(`v1 · ${scenario.version.message}`);

    // The API agrees: version 1 holds the graph as drawn.
    const api = apiClient(url);
    const listed = (await api.pipeline.list.query()).find((p) => p.name === name);
    expect(listed?.latestVersion?.number).toBe(1);
    const saved = await api.pipeline.get.query({ id: listed?.id ?? "" });
    const v1 = saved.versions[0];
    expect(v1?.message).toBe(scenario.version.message);
    expect(v1?.graph.nodes.map((n) => n.id).sort()).toEqual([...scenario.nodes.map((n) => n.id), scenario.keyBy.id].sort());
    expect(v1?.graph.nodes.find((n) => n.id === d.node)?.params).toMatchObject({ [d.param]: d.right, threshold: 3 });

    // Reload: the pipeline, its version and its graph are there.
    await page.reload({ waitUntil: "domcontentloaded" });
    await expect.poll(() => page.getByTestId("pipeline-title").textContent()).toBe(name);
    await expect.poll(() => page.getByTestId("version-select").locator("option").allTextContents()).toContain(`v1 · ${scenario.version.message}`);
    await expect.poll(() => page.getByTestId(`pipeline-item-${name}`).textContent()).toContain("v1");
    for (const node of [...scenario.nodes, scenario.keyBy]) await page.getByTestId(`node-${node.id}`).waitFor({ state: "visible" });
    expect(await page.locator(".react-flow__edge").count()).toBe(scenario.edgesBeforeKeyBy.length + scenario.edgesWithKeyBy.length);
    await page.getByTestId("version-select").selectOption("1");
    await page.getByTestId("readonly-banner").waitFor({ state: "visible" });
    await shot(page, "reloaded-version");
    await page.getByTestId("back-to-draft").click();
    await page.getByTestId("save-version").waitFor({ state: "visible" });

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });

  it("adds, connects and edits a node with the keyboard only; undoes, redoes, copies and pastes", async () => {
    const { page } = browser;
    onTestFailed(() => page.screenshot({ path: artifactPath("designer-failed-keyboard.png") }).then(() => undefined));
    const k = scenario.keyboard;
    // No mouse from here: focus starts on the page.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const late = edgeLocator(page, k.edge);

    // `/` focuses the palette search; Enter adds the best match at a free spot and focuses it.
    await page.keyboard.press("/");
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe("palette-search");
    await page.keyboard.type(k.search);
    await expect.poll(() => page.locator('[role="option"][aria-selected="true"]').getAttribute("data-testid")).toBe(`palette-item-${k.adds.type}`);
    await shot(page, "keyboard-search");
    await page.keyboard.press("Enter");
    await page.getByTestId(`node-${k.adds.id}`).waitFor({ state: "visible" });
    await expect.poll(() => page.evaluate(() => document.activeElement?.closest(".react-flow__node")?.getAttribute("data-id"))).toBe(k.adds.id);

    // `C` opens the connect command for it: filter, Enter.
    await page.keyboard.press("c");
    await page.getByTestId("connect-dialog").waitFor({ state: "visible" });
    await page.keyboard.type(k.connectFilter);
    await expect.poll(() => page.getByTestId(`connect-option-${k.edge}`).getAttribute("aria-selected")).toBe("true");
    await shot(page, "keyboard-connect");
    await page.keyboard.press("Enter");
    await late.waitFor({ state: "attached" });
    expect(await page.getByTestId("connect-dialog").count()).toBe(0);

    // `I` jumps into its params; Escape returns to the node.
    await page.keyboard.press("i");
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-testid"))).toBe(`param-${Object.keys(k.params)[0]}`);
    for (const value of Object.values(k.params)) await page.keyboard.type(value);
    await page.keyboard.press("Escape");
    await expect.poll(() => page.evaluate(() => document.activeElement?.closest(".react-flow__node")?.getAttribute("data-id"))).toBe(k.adds.id);
    // The late port is now reviewed: no problem left at all.
    await expect.poll(() => problemsText(page)).toContain("No problems");
    await shot(page, "keyboard-connected");

    // Undo the param, then the edge; redo both.
    await page.keyboard.press("Control+z");
    await page.keyboard.press("Control+z");
    await expect.poll(() => late.count()).toBe(0);
    await page.keyboard.press("Control+Shift+z");
    await page.keyboard.press("Control+y");
    await late.waitFor({ state: "attached" });
    await expect.poll(() => problemsText(page)).toContain("No problems");

    // Copy and paste: a new id, selected; Delete removes it.
    await page.keyboard.press("Control+c");
    await page.keyboard.press("Control+v");
    await page.getByTestId(`node-${k.pasted}`).waitFor({ state: "visible" });
    await expect.poll(() => page.locator(".react-flow__node.selected").evaluateAll((els) => els.map((e) => e.getAttribute("data-id")))).toEqual([k.pasted]);
    await shot(page, "keyboard-pasted");
    await page.keyboard.press("Delete");
    await expect.poll(() => page.getByTestId(`node-${k.pasted}`).count()).toBe(0);

    // `?` lists every shortcut.
    await page.keyboard.press("?");
    await page.getByTestId("shortcuts-dialog").waitFor({ state: "visible" });
    await shot(page, "shortcuts");
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByTestId("shortcuts-dialog").count()).toBe(0);

    // Autosave has the draft: it holds the keyboard's node and edge.
    const api = apiClient(url);
    const id = (await api.pipeline.list.query()).find((p) => p.name === name)?.id ?? "";
    await expect.poll(async () => (await api.pipeline.get.query({ id })).draft.edges.map((e) => `${e.from}->${e.to}`), { timeout: 10_000 }).toContain(k.edge);

    expect(browser.externalRequests).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  });
});
