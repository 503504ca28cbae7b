// The web app's edge against a stranger (issue 35, points 7 and 8), on the built app as `npm start`
// serves it: oversized bodies are refused before they are read (the server's memory stays flat),
// every page and API answer carries the security headers, and Monaco still works under the CSP in
// Chromium, with no CSP violation in the console. Beside them (issue 35 point 6): a 5 MB paste into an
// expression is refused with a message, not stored.
import { execFileSync } from "node:child_process";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT } from "@keyflow/operators";
import { apiClient, artifactPath, launchBrowser, startWebApp, type TestBrowser, type WebApp } from "./support";

let app: WebApp;
let browser: TestBrowser;

beforeAll(async () => {
  app = await startWebApp({ name: "edge" });
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

/** Resident memory of the web server's process group (next and any worker it forks), in MB. */
function serverRssMb(): number {
  const out = execFileSync("ps", ["-o", "rss=", "-g", String(app.pid)], { encoding: "utf8" });
  return out.split("\n").reduce((sum, line) => sum + (Number(line.trim()) || 0), 0) / 1024;
}

/** POSTs `mb` megabytes (never held in memory here) and resolves with the status the server answered. */
function hugePost(path: string, mb: number, headers: Record<string, string>): Promise<number> {
  const url = new URL(path, app.url);
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const req = http.request(url, { method: "POST", headers: { "content-length": String(mb * chunk.length), ...headers } });
    let sent = 0;
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      res.resume();
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    // The server closes the connection once it has answered: the rest of the body fails to send.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (sent < mb && !answered) {
        sent += 1;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      if (!answered) req.end();
    };
    // The headers alone declare the size: a server that refuses it answers before the body starts
    // (sending at once races the answer, and a write after the server closed fails with EPIPE).
    req.flushHeaders();
    setTimeout(pump, 1_000);
  });
}

const json = { "content-type": "application/json", "x-keyflow-csrf": "1" };

describe("the web app's edge", () => {
  it("refuses three unauthenticated 300 MB bodies with 413 before reading them, and its memory stays flat", async () => {
    // Warm up first, so the figure before is the server's working size.
    await fetch(`${app.url}/api/health`);
    const before = serverRssMb();
    const statuses = await Promise.all([hugePost("/api/trpc/pipeline.create", 300, json), hugePost("/api/auth/login", 300, json), hugePost("/api/backtests/files", 300, { "content-type": "application/x-ndjson", "x-keyflow-csrf": "1" })]);
    const after = serverRssMb();
    console.log(`web server resident memory: ${Math.round(before)} MB before, ${Math.round(after)} MB after`);
    expect({ statuses, grewMb: Math.round(after - before) }).toEqual({ statuses: [413, 413, 413], grewMb: expect.any(Number) });
    expect(after - before).toBeLessThan(200);
    // The answer says what is wrong.
    const small = await fetch(`${app.url}/api/auth/login`, { method: "POST", headers: json, body: JSON.stringify({ email: "x@bank.test", password: "p".repeat(64 * 1024) }) });
    expect(small.status).toBe(413);
    expect(((await small.json()) as { error: { message: string } }).error.message).toMatch(/body.*larger than \d+ bytes/);
    // And the server still answers.
    expect((await fetch(`${app.url}/api/health`)).status).toBe(200);
  }, 180_000);

  it("sends the security headers on pages and on API routes", async () => {
    for (const path of ["/login", "/", "/no-such-page", "/api/health", "/api/trpc/users.me", "/api/audit/export"]) {
      const res = await fetch(`${app.url}${path}`, { redirect: "manual" });
      const csp = res.headers.get("content-security-policy") ?? "";
      expect({ path, csp: csp.includes("frame-ancestors 'none'") && csp.includes("default-src 'self'"), nosniff: res.headers.get("x-content-type-options"), referrer: res.headers.get("referrer-policy") }).toEqual({
        path,
        csp: true,
        nosniff: "nosniff",
        referrer: "strict-origin-when-cross-origin",
      });
    }
  });

  it("keeps Monaco working under the CSP: the expression editor loads its worker, edits and marks an unknown field, with no CSP violation", async () => {
    const name = `edge-csp-${Date.now().toString(36)}`;
    const { id } = await apiClient(app.url).pipeline.create.mutate({
      name,
      graph: {
        format: PIPELINE_FORMAT,
        name,
        nodes: [
          { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts", fields: ["txId", "cardId", "amount", "country", "ts"] }, position: { x: 0, y: 0 } },
          { id: "large", type: "filter", params: { expression: "amount > 1000" }, position: { x: 300, y: 0 } },
          { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 600, y: 0 } },
        ],
        edges: [
          { from: "payments", to: "large" },
          { from: "large", to: "alerts" },
        ],
      },
    });
    const { page } = browser;
    const violations: string[] = [];
    const workers: string[] = [];
    page.on("worker", (worker) => workers.push(worker.url()));
    page.on("console", (message) => {
      if (/Content Security Policy|Content-Security-Policy/i.test(message.text())) violations.push(message.text());
    });
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => console.error(`Content Security Policy violation: ${e.violatedDirective} ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`));
    });
    const response = await page.goto(`${app.url}/?pipeline=${id}`, { waitUntil: "domcontentloaded" });
    expect(response?.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    await page.getByTestId("node-large").click();
    const cel = page.getByTestId("cel-expression");
    await cel.locator(".monaco-editor .view-lines").waitFor({ state: "visible" });
    await expect.poll(async () => ((await cel.locator(".view-lines").textContent()) ?? "").replace(/\u00a0/g, " ")).toBe("amount > 1000");
    await cel.locator(".view-lines").click();
    await page.keyboard.press("End");
    await page.keyboard.type(" && contry");
    await page.keyboard.press("Escape");
    await expect.poll(async () => ((await cel.locator(".view-lines").textContent()) ?? "").replace(/\u00a0/g, " ")).toBe("amount > 1000 && contry");
    await cel.locator(".squiggly-error").first().waitFor({ state: "attached" });
    await expect.poll(() => workers.length, { timeout: 15_000 }).toBeGreaterThan(0);
    expect(violations).toEqual([]);
    expect(browser.pageErrors).toEqual([]);
  }, 120_000);
  it("refuses a 5 MB paste into an expression with a message: the editor keeps its text, the draft is not changed, the tab answers", async () => {
    const name = `edge-paste-${Date.now().toString(36)}`;
    const api = apiClient(app.url);
    const { id } = await api.pipeline.create.mutate({
      name,
      graph: {
        format: PIPELINE_FORMAT,
        name,
        nodes: [
          { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts", fields: ["txId", "cardId", "amount", "ts"] }, position: { x: 0, y: 0 } },
          { id: "large", type: "filter", params: { expression: "amount > 1000" }, position: { x: 300, y: 0 } },
          { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 600, y: 0 } },
        ],
        edges: [
          { from: "payments", to: "large" },
          { from: "large", to: "alerts" },
        ],
      },
    });
    const { page, context } = browser;
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: app.url });
    await page.goto(`${app.url}/?pipeline=${id}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("node-large").click();
    const cel = page.getByTestId("cel-expression");
    const text = async () => ((await cel.locator(".view-lines").textContent()) ?? "").replace(/\u00a0/g, " ");
    await cel.locator(".monaco-editor .view-lines").waitFor({ state: "visible" });
    await expect.poll(text).toBe("amount > 1000");
    // The clipboard holds 5 MB; the analyst clicks into the expression and presses Ctrl+V.
    await page.evaluate(() => navigator.clipboard.writeText(`amount > ${"9".repeat(5 * 1024 * 1024)}`));
    await cel.locator(".view-lines").click();
    await page.keyboard.press("End");
    await page.keyboard.press("Control+V");
    const error = page.getByTestId("param-error-expression");
    await expect.poll(() => error.textContent(), { timeout: 20_000 }).toMatch(/^refused: that would make the expression 5,242,902 characters long; an expression holds at most [\d,]+$/);
    await page.screenshot({ path: artifactPath("edge-paste-refused.png") });
    expect(await text()).toBe("amount > 1000");
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    // Nothing of it reached the stored draft (autosave would have sent it).
    await new Promise((r) => setTimeout(r, 2_000));
    const stored = await api.pipeline.get.query({ id });
    expect((stored.draft as { nodes: { id: string; params: { expression?: string } }[] }).nodes.find((n) => n.id === "large")?.params.expression).toBe("amount > 1000");
    expect(browser.pageErrors).toEqual([]);
  }, 120_000);
});
