// Debian's Chromium driven by playwright-core. Every request leaving localhost is failed and
// recorded, so a test can assert that the app needed nothing from the internet (no CDN for Monaco,
// no Google Fonts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { E2E_ADMIN, E2E_PASSWORD, e2eEmail, sessionToken, startedApps, type E2eRole } from "./auth";

export const CHROMIUM_PATH = process.env.KEYFLOW_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"];

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** True for URLs the app may load: its own server, and in-page schemes (data:, blob:). */
export function isLocalUrl(url: string): boolean {
  const parsed = new URL(url);
  if (parsed.protocol === "data:" || parsed.protocol === "blob:" || parsed.protocol === "about:") return true;
  return LOCAL_HOSTS.has(parsed.hostname);
}

export interface TestBrowser {
  /** A persistent context on a fresh, temporary --user-data-dir (removed by close()). */
  context: BrowserContext;
  page: Page;
  /** Requests to another origin than localhost; each was failed. */
  externalRequests: string[];
  /** Uncaught page errors and console errors, for diagnostics and assertions. */
  pageErrors: string[];
  consoleErrors: string[];
  consoleWarnings: string[];
  close(): Promise<void>;
}

/**
 * Signs the browser in as `person` on the app at baseUrl the way the sign-in form does: a fetch to
 * POST /api/auth/login from a page of the app, so Chromium itself stores the cookie (HttpOnly,
 * Secure, SameSite=Lax; Chromium keeps Secure cookies for http://127.0.0.1). CDP's setCookies
 * refuses a Secure `__Host-` cookie for an http URL, hence not context.addCookies.
 */
export async function signInBrowser(page: Page, baseUrl: string, person = "e2e", role: E2eRole = "analyst"): Promise<void> {
  await sessionToken(baseUrl, person, role); // creates the account when it does not exist yet
  const credentials = person === "admin" ? { email: E2E_ADMIN.email, password: E2E_ADMIN.password } : { email: e2eEmail(person), password: E2E_PASSWORD };
  await page.goto(`${baseUrl}/login`, { waitUntil: "domcontentloaded" });
  const status = await page.evaluate(async (body) => {
    const res = await fetch("/api/auth/login", { method: "POST", headers: { "content-type": "application/json", "x-keyflow-csrf": "1" }, body: JSON.stringify(body) });
    return res.status;
  }, credentials);
  if (status !== 200) throw new Error(`e2e: the browser could not sign in as ${credentials.email} (${status})`);
}

/**
 * `signIn`: who the browser is signed in as on every app startWebApp started (default "e2e"), with
 * `role` when the account is created (default analyst); false for a browser with no session.
 */
export async function launchBrowser(opts: { viewport?: { width: number; height: number }; signIn?: string | false; role?: E2eRole } = {}): Promise<TestBrowser> {
  if (!fs.existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}: apt-get install -y chromium (never npx playwright install)`);
  }
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-chromium-"));
  // playwright passes the folder to Chromium as --user-data-dir.
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: opts.viewport ?? { width: 1600, height: 900 },
    deviceScaleFactor: 1,
  });
  const externalRequests: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (isLocalUrl(url)) return route.continue();
    externalRequests.push(url);
    return route.abort("blockedbyclient");
  });
  const page = context.pages()[0] ?? (await context.newPage());
  if (opts.signIn !== false) {
    for (const app of startedApps()) await signInBrowser(page, app, opts.signIn ?? "e2e", opts.role ?? "analyst");
  }
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];
  const consoleWarnings: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
    if (message.type() === "warning") consoleWarnings.push(message.text());
  });
  return {
    context,
    page,
    externalRequests,
    pageErrors,
    consoleErrors,
    consoleWarnings,
    async close() {
      await context.close().catch(() => undefined);
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
