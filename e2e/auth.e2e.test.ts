// Signing in and the audit trail, in Chromium against the real app (issue 7, "People and
// permissions" and "Audit trail"): a browser without a session lands on the sign-in page; a wrong
// password is refused; the analyst signs in, sees their name, and the session cookie has the flags
// it should (HttpOnly, Secure, SameSite=Lax, __Host-); they relabel a node (an edit, autosaved),
// find that edit under their name in the audit view, export the filtered trail as CSV and sign out.
// Screenshots go to e2e/artifacts/auth-*.png.
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { apiClient, artifactPath, E2E_PASSWORD, e2eEmail, launchBrowser, SESSION_COOKIE, sessionToken, startWebApp, type TestBrowser, type WebApp } from "./support";

function rule(name: string): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" }, position: { x: 0, y: 80 } },
      { id: "big", type: "filter", params: { expression: "amount > 50000" }, position: { x: 320, y: 80 } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" }, position: { x: 640, y: 80 } },
    ],
    edges: [
      { from: "payments", to: "big" },
      { from: "big", to: "alerts" },
    ],
  };
}

let step = 0;
async function shot(browser: TestBrowser, name: string) {
  step += 1;
  await browser.page.screenshot({ path: artifactPath(`auth-${String(step).padStart(2, "0")}-${name}.png`) });
}

describe("signing in, and the audit trail in the web app", () => {
  let app: WebApp;
  let browser: TestBrowser;
  const name = `audited-${Date.now().toString(36)}`;
  const analyst = "ana";
  let pipelineId = "";

  beforeAll(async () => {
    app = await startWebApp({ name: "auth" });
    // The pipeline comes from the admin; the analyst's account is created by the admin too.
    const admin = apiClient(app.url, "admin", "admin");
    pipelineId = (await admin.pipeline.create.mutate({ name, graph: rule(name) })).id;
    await sessionToken(app.url, analyst, "analyst");
    browser = await launchBrowser({ signIn: false });
  });

  afterAll(async () => {
    if (browser) fs.writeFileSync(artifactPath("auth-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
  });

  it("sends a visitor without a session to the sign-in page and refuses a wrong password", async () => {
    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await expect.poll(() => new URL(page.url()).pathname).toBe("/login");
    expect(new URL(page.url()).searchParams.get("next")).toBe(`/?pipeline=${pipelineId}`);
    await page.getByTestId("login-email").fill(e2eEmail(analyst));
    await page.getByTestId("login-password").fill("not the password");
    await page.getByTestId("login-submit").click();
    await expect.poll(() => page.getByTestId("login-error").textContent()).toBe("wrong email or password");
    expect(await browser.context.cookies(app.url)).toEqual([]);
    await shot(browser, "wrong-password");
  });

  it("signs the analyst in with a HttpOnly, Secure, SameSite=Lax __Host- cookie and shows their name", async () => {
    const { page } = browser;
    await page.getByTestId("login-password").fill(E2E_PASSWORD);
    await page.getByTestId("login-submit").click();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/");
    expect(new URL(page.url()).searchParams.get("pipeline")).toBe(pipelineId);
    await expect.poll(() => page.getByTestId("user-name").textContent(), { timeout: 30_000 }).toBe(analyst);
    expect(await page.getByTestId("user-role").textContent()).toBe("analyst");
    expect(await page.getByTestId("nav-users").count()).toBe(0);

    const cookies = await browser.context.cookies(app.url);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: SESSION_COOKIE, path: "/", httpOnly: true, secure: true, sameSite: "Lax" });
    // HttpOnly: page scripts cannot read it.
    expect(await page.evaluate(() => document.cookie)).not.toContain(SESSION_COOKIE);
    await shot(browser, "signed-in");
  });

  it("records the analyst's edit, shows it in the audit view and exports it as CSV", async () => {
    const { page } = browser;
    await page.getByTestId("node-big").click();
    await page.getByTestId("node-label").fill("Large payments");
    await expect.poll(() => page.getByTestId("autosave").getAttribute("data-state"), { timeout: 20_000 }).toBe("saved");

    // The pipeline's own Audit tab lists it…
    await page.getByTestId("tab-audit").click();
    const tabRows = page.getByTestId("audit-view").locator('[data-action="edit"]');
    await expect.poll(() => tabRows.count(), { timeout: 20_000 }).toBeGreaterThan(0);
    expect(await tabRows.first().textContent()).toContain(e2eEmail(analyst));
    await shot(browser, "pipeline-audit-tab");

    // …and so does the audit page, filtered to the analyst and to edits.
    await page.getByTestId("nav-audit").click();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/audit");
    await page.getByTestId("audit-filter-actor").fill(analyst);
    await page.getByTestId("audit-filter-action").selectOption("edit");
    await page.getByTestId("audit-filter-pipeline").selectOption(pipelineId);
    const rows = page.getByTestId("audit-table").locator("tbody tr[data-action]");
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBeGreaterThan(0);
    const shown = await rows.count();
    const row = (await rows.first().textContent()) ?? "";
    expect(row).toContain(e2eEmail(analyst));
    expect(row).toContain("Large payments");
    // The admin's creation of the pipeline is filtered out (another actor, another action).
    expect(await page.getByTestId("audit-table").locator('tr[data-action="create"]').count()).toBe(0);
    await shot(browser, "audit-view");

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("audit-export-csv").click()]);
    expect(download.suggestedFilename()).toMatch(/^keyflow-audit-.*\.csv$/);
    const file = artifactPath("auth-audit-export.csv");
    await download.saveAs(file);
    const lines = fs.readFileSync(file, "utf8").trim().split("\r\n");
    expect(lines[0]).toBe("id,at,actor,action,subject_type,subject_id,reason,details,prev_hash,hash");
    // The export has exactly the rows the view shows (same filter), oldest first.
    expect(lines).toHaveLength(shown + 1);
    expect(lines[1]).toContain(`${e2eEmail(analyst)},edit,pipeline,${pipelineId}`);
    expect(lines[1]).toContain("Large payments");
  });

  it("keeps the users page to admins; an admin changes a role there, on the record", async () => {
    // The analyst is sent back to the designer.
    await browser.page.goto(`${app.url}/users`, { waitUntil: "domcontentloaded" });
    await expect.poll(() => new URL(browser.page.url()).pathname).toBe("/");
    const admin = await launchBrowser({ signIn: "admin", role: "admin" });
    try {
      await admin.page.goto(`${app.url}/users`, { waitUntil: "domcontentloaded" });
      const row = admin.page.getByTestId(`user-row-${e2eEmail(analyst)}`);
      await row.waitFor({ timeout: 20_000 });
      await row.locator("select").selectOption("approver");
      await expect.poll(async () => (await apiClient(app.url, "admin", "admin").users.list.query()).find((u) => u.email === e2eEmail(analyst))?.role, { timeout: 20_000 }).toBe("approver");
      await admin.page.screenshot({ path: artifactPath("auth-users-page.png") });
      const changes = await apiClient(app.url, "admin", "admin").audit.list.query({ action: "role_change" });
      expect(changes.events[0]).toMatchObject({ actor: "admin@e2e.keyflow.test", details: { email: e2eEmail(analyst), before: "analyst", after: "approver" } });
      await row.locator("select").selectOption("analyst");
      await expect.poll(async () => (await apiClient(app.url, "admin", "admin").users.list.query()).find((u) => u.email === e2eEmail(analyst))?.role, { timeout: 20_000 }).toBe("analyst");
    } finally {
      await admin.close();
    }
  });

  it("signs out: the session is gone and the designer asks to sign in again", async () => {
    const { page } = browser;
    await page.goto(app.url, { waitUntil: "domcontentloaded" });
    await page.getByTestId("logout").click();
    await expect.poll(() => new URL(page.url()).pathname).toBe("/login");
    await page.goto(app.url, { waitUntil: "domcontentloaded" });
    await expect.poll(() => new URL(page.url()).pathname).toBe("/login");
    await shot(browser, "signed-out");
    // The trail has the sign-in and the sign-out, as the admin can see.
    const events = await apiClient(app.url, "admin", "admin").audit.list.query({ actor: e2eEmail(analyst) });
    expect(events.events.map((e) => e.action)).toEqual(expect.arrayContaining(["login", "edit", "logout"]));
  });
});
