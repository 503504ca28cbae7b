// Live operations on the canvas, driven in Chromium against a real runner (`keyflow serve`): a
// pipeline on the demo source (200 payments/s) → keyBy → velocity → file sink, and → filter → a
// second file sink, created and deployed through the API, shows moving figures on its nodes (over
// the tRPC subscription, server-sent events) and throughput on its edges; throttling the second
// sink from its live panel turns the nodes above it HIGH and marks the sink as the bottleneck
// within seconds, and lifting the throttle brings them back to OK; the Operations tab lists
// completed checkpoints (every 2 s) with their chart, the source's partition, the last records into
// a sink (the runner's tap), a card's velocity state (the runner's queryable state), and stops the
// deployment.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, launchBrowser, startRunner, startWebApp, type TestBrowser, type TestRunner, type WebApp } from "./support";

function livePipeline(name: string): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    description: "Demo payments at a steady 200/s through a velocity rule, for the live canvas.",
    settings: { checkpointIntervalMs: 2000 },
    nodes: [
      { id: "payments", type: "source.demo", label: "Demo payments", params: { eventsPerSecond: 200, seed: 7, cardCount: 300, maxOutOfOrdernessMs: 2000 }, position: { x: 0, y: 80 } },
      { id: "byCard", type: "keyBy", label: "By card", params: { field: "cardId" }, position: { x: 300, y: 80 } },
      { id: "vel", type: "velocity", label: "Card testing", params: { threshold: 3, windowMs: "1m", idField: "txId" }, position: { x: 600, y: 80 } },
      { id: "alerts", type: "sink.file", label: "Alerts", params: { path: `${name}/alerts.jsonl` }, position: { x: 900, y: 80 } },
      { id: "paid", type: "filter", label: "Paid", params: { expression: "amount > 0" }, position: { x: 300, y: 420 } },
      { id: "out", type: "sink.file", label: "All paid", params: { path: `${name}/paid.jsonl` }, position: { x: 600, y: 420 } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "alerts" },
      { from: "payments", to: "paid" },
      { from: "paid", to: "out" },
    ],
  };
}

/** The total after "in" or "out" on a node's live figures (`out 200/s 12,345`). */
function total(text: string | null, dir: "in" | "out"): number {
  const m = new RegExp(`${dir}\\s+\\S+/s\\s+([\\d,]+)`).exec(text ?? "");
  return m?.[1] ? Number(m[1].replaceAll(",", "")) : -1;
}

describe("live operations on the canvas", () => {
  let app: WebApp;
  let runner: TestRunner;
  let browser: TestBrowser;
  const name = `e2e-live-${Date.now().toString(36)}`;
  let pipelineId = "";

  beforeAll(async () => {
    runner = await startRunner("live");
    app = await startWebApp({ name: "live", env: { RUNNER_URL: runner.url } });
    // Signed in as an analyst (e2e/support): analysts deploy to shadow and operate their deployments.
    browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
    const api = apiClient(app.url, "operator");
    const created = await api.pipeline.create.mutate({ name, graph: livePipeline(name) });
    pipelineId = created.id;
    const saved = await api.pipeline.saveVersion.mutate({ pipelineId, graph: livePipeline(name), message: "live canvas" });
    const deployment = await api.deployment.deploy.mutate({ versionId: saved.version.id });
    expect(deployment.status).toBe("running");
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("live-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`), ...browser.consoleWarnings.map((m) => `warning: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
    await runner?.stop();
  });

  it("shows moving figures on the nodes and throughput on the edges", async () => {
    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    const source = page.getByTestId("live-payments");
    await source.waitFor({ state: "visible", timeout: 30_000 });

    // The records count grows between two readings, and the rate settles near the source's 200/s.
    const first = total(await source.textContent(), "out");
    expect(first).toBeGreaterThanOrEqual(0);
    await expect.poll(async () => total(await source.textContent(), "out"), { timeout: 15_000 }).toBeGreaterThan(first);
    const vel = page.getByTestId("live-vel");
    const velFirst = total(await vel.textContent(), "in");
    await expect.poll(async () => total(await vel.textContent(), "in"), { timeout: 15_000 }).toBeGreaterThan(velFirst);
    await expect.poll(async () => (await page.getByTestId("live-byCard").textContent()) ?? "", { timeout: 15_000 }).toMatch(/in\s+(1\d\d|2\d\d)\/s/);
    const velText = (await vel.textContent()) ?? "";
    expect(velText).toMatch(/wm lag/);
    expect(velText).toMatch(/keys\s*\d/);
    expect(velText).toMatch(/state\s*[\d.]+\s*(B|KiB|MiB)/);
    expect(velText).toMatch(/late/);
    expect(velText).toMatch(/dlq/);
    // Keyed state builds up in the velocity node.
    await expect.poll(async () => Number(/keys\s*([\d.]+)/.exec((await vel.textContent()) ?? "")?.[1] ?? 0), { timeout: 15_000 }).toBeGreaterThan(0);
    // A sparkline with points once a few snapshots arrived.
    await expect.poll(async () => ((await source.locator("polyline").first().getAttribute("points")) ?? "").split(" ").length, { timeout: 15_000 }).toBeGreaterThan(2);

    // The edges carry throughput as their label and draw thicker than at rest.
    const edge = page.locator('.react-flow__edge[data-id="payments->byCard"]');
    await expect.poll(async () => (await edge.textContent()) ?? "", { timeout: 10_000 }).toMatch(/\d+\/s/);
    const width = await edge.locator(".react-flow__edge-path").evaluate((el) => Number.parseFloat(getComputedStyle(el).strokeWidth));
    expect(width).toBeGreaterThan(1.5);

    await page.screenshot({ path: artifactPath("live-canvas.png") });
    expect(browser.externalRequests).toEqual([]);
  });

  it("turns the nodes above a throttled sink HIGH with the sink as the cause, and recovers once lifted", async () => {
    const { page } = browser;
    const source = page.getByTestId("live-payments");
    const paid = page.getByTestId("live-paid");
    const sink = page.getByTestId("live-out");
    // Running free: every node has a backpressure level from the runner, all OK.
    for (const node of [source, paid, page.getByTestId("live-byCard"), page.getByTestId("live-vel")]) {
      await expect.poll(() => node.getAttribute("data-backpressure"), { timeout: 15_000 }).toBe("ok");
    }
    await expect.poll(() => sink.getAttribute("data-role"), { timeout: 15_000 }).not.toBe("cause");
    expect(await page.getByTestId("throttle-out-state").textContent()).toBe("no throttle");

    // Throttle the sink to 5 records/s (the source makes 200/s), from its live panel.
    await page.getByTestId("throttle-out-input").fill("5");
    await page.getByTestId("throttle-out-set").click();
    await expect.poll(async () => page.getByTestId("throttle-out-state").textContent(), { timeout: 15_000 }).toBe("throttled to 5/s");
    await expect.poll(() => paid.getAttribute("data-backpressure"), { timeout: 30_000 }).toBe("high");
    await expect.poll(() => sink.getAttribute("data-role"), { timeout: 30_000 }).toBe("cause");
    // The nodes above are waiting for the sink, not slow themselves.
    await expect.poll(() => paid.getAttribute("data-role"), { timeout: 10_000 }).toBe("waiting");
    expect(await source.getAttribute("data-backpressure")).toBe("high");
    expect(await paid.textContent()).toMatch(/HIGH\s+\d+ %/);
    expect(await paid.textContent()).toMatch(/waiting on out/);
    expect(await sink.textContent()).toMatch(/bottleneck/);
    await page.screenshot({ path: artifactPath("live-throttled.png") });

    // Lift it: the pipeline runs free again.
    await page.getByTestId("throttle-out-lift").click();
    await expect.poll(async () => page.getByTestId("throttle-out-state").textContent(), { timeout: 15_000 }).toBe("no throttle");
    await expect.poll(() => paid.getAttribute("data-backpressure"), { timeout: 30_000 }).toBe("ok");
    await expect.poll(() => sink.getAttribute("data-role"), { timeout: 30_000 }).not.toBe("cause");
    await expect.poll(() => source.getAttribute("data-backpressure"), { timeout: 30_000 }).toBe("ok");
    await page.screenshot({ path: artifactPath("live-throttle-lifted.png") });
  });

  it("lists completed checkpoints in the Operations tab, and stops the deployment", async () => {
    const { page } = browser;
    await page.getByTestId("tab-operations").click();
    const panel = page.getByTestId("operations-panel");
    await panel.waitFor({ state: "visible" });
    await panel.locator('tr[data-status="completed"]').first().waitFor({ state: "visible", timeout: 30_000 });
    expect(await page.getByTestId("job-status").textContent()).toBe("running");
    await page.getByTestId("checkpoint-chart").locator("canvas").first().waitFor({ state: "visible" });
    // More come every 2 s.
    await expect.poll(() => panel.locator('tr[data-status="completed"]').count(), { timeout: 20_000 }).toBeGreaterThan(1);
    expect(await page.getByTestId("checkpoint-slow-warning").count()).toBe(0);
    await page.screenshot({ path: artifactPath("live-operations.png") });

    // Sources: the demo source's one partition, active, its records counting up and its watermark.
    const partition = page.getByTestId("partition-payments-0");
    await expect.poll(() => partition.getAttribute("data-state"), { timeout: 15_000 }).toBe("active");
    expect(await partition.textContent()).toMatch(/^0active[\d.]+k?\d*/);
    // Skew is measured between keyed subtasks: this job runs in one thread, and says so.
    expect(await page.getByTestId("skew-panel").textContent()).toMatch(/parallel job/);

    // Node drill-down: the last records into the sink, from the runner's tap.
    await page.getByTestId("drilldown-node").selectOption("out");
    await page.getByTestId("drilldown-records").locator("li").first().waitFor({ state: "visible", timeout: 15_000 });
    expect(await page.getByTestId("drilldown-records").locator("li").count()).toBe(20);
    expect(await page.getByTestId("drilldown-records").textContent()).toMatch(/"cardId":"/);
    await page.getByTestId("drilldown-panel").scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("live-drilldown.png") });

    // Key lookup: a card seen in the tap, its velocity state and timers from the runner's queryable state.
    const card = /"cardId":"([^"]+)"/.exec((await page.getByTestId("drilldown-records").textContent()) ?? "")?.[1];
    expect(card).toBeDefined();
    await page.getByTestId("drilldown-node").selectOption("vel");
    await page.getByTestId("drilldown-key").fill(card ?? "");
    await page.getByTestId("drilldown-lookup").click();
    const state = page.getByTestId("drilldown-state");
    await state.waitFor({ state: "visible", timeout: 15_000 });
    expect(await state.getAttribute("data-key")).toBe(card);
    expect(await state.textContent()).toMatch(new RegExp(`State of key ${card} at vel: [1-9]\\d* entr`));
    await state.scrollIntoViewIfNeeded();
    await page.screenshot({ path: artifactPath("live-key-state.png") });

    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByTestId("job-stop").click();
    await expect.poll(async () => (await page.getByTestId("stop-result").textContent().catch(() => "")) ?? "", { timeout: 60_000 }).toMatch(/stopped after checkpoint \d+/);
    // No running deployment: the canvas is a designer again.
    await page.getByTestId("live-payments").waitFor({ state: "detached", timeout: 15_000 });
    await page.getByTestId("operations-empty").waitFor({ state: "visible" });
    await page.screenshot({ path: artifactPath("live-stopped.png") });
  });
});
