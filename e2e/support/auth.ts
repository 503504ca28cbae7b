// Signing in for the e2e tests. Every web app started by startWebApp gets a known first admin
// (E2E_ADMIN); a test names the person it acts as (`apiClient(url, "alice")`, the browser's
// sign-in) and that person is created on first use, by the admin, through the app's own API, with
// the email `<name>@e2e.keyflow.test`. Sessions are real: a POST to /api/auth/login and its cookie.
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "@keyflow/web/api";

export const SESSION_COOKIE = "__Host-keyflow_session";
export const E2E_ADMIN = { email: "admin@e2e.keyflow.test", password: "e2e-admin-password-not-secret", name: "E2E Admin" } as const;
/** Every account the tests create has this password. */
export const E2E_PASSWORD = "e2e-password-not-secret";

export type E2eRole = "analyst" | "approver" | "admin";

export function e2eEmail(person: string): string {
  return person.includes("@") ? person : `${person}@e2e.keyflow.test`;
}

/** POST /api/auth/login; the session token from the Set-Cookie it answers with. */
export async function loginToken(baseUrl: string, email: string, password: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-keyflow-csrf": "1" },
    body: JSON.stringify({ email, password }),
  });
  if (!res.ok) throw new Error(`e2e: signing in as ${email} at ${baseUrl} failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  const token = cookie?.split(";")[0]?.slice(SESSION_COOKIE.length + 1);
  if (!token) throw new Error(`e2e: signing in as ${email} set no ${SESSION_COOKIE} cookie`);
  return token;
}

function client(baseUrl: string, token: string) {
  return createTRPCClient<AppRouter>({ links: [httpLink({ url: `${baseUrl}/api/trpc`, transformer: superjson, headers: { cookie: `${SESSION_COOKIE}=${token}`, "x-keyflow-csrf": "1" } })] });
}

const tokens = new Map<string, Promise<string>>();

/**
 * A session token for `person` on the app at baseUrl, creating the account (as the admin) when it
 * does not exist yet. "admin" is the first admin itself. Cached per app and person.
 */
export function sessionToken(baseUrl: string, person: string, role: E2eRole = "analyst"): Promise<string> {
  const key = `${baseUrl} ${person}`;
  let token = tokens.get(key);
  if (!token) {
    token = (async () => {
      const adminToken = await loginToken(baseUrl, E2E_ADMIN.email, E2E_ADMIN.password);
      if (person === "admin") return adminToken;
      const email = e2eEmail(person);
      const admin = client(baseUrl, adminToken);
      if (!(await admin.users.list.query()).some((u) => u.email === email)) {
        await admin.users.create.mutate({ email, name: person, role, password: E2E_PASSWORD });
      }
      return loginToken(baseUrl, email, E2E_PASSWORD);
    })();
    token.catch(() => tokens.delete(key));
    tokens.set(key, token);
  }
  return token;
}

/** The apps started by startWebApp in this test file: launchBrowser signs in to each. */
const started = new Set<string>();

export function registerApp(baseUrl: string): void {
  started.add(baseUrl);
}

export function unregisterApp(baseUrl: string): void {
  started.delete(baseUrl);
  for (const key of [...tokens.keys()]) if (key.startsWith(`${baseUrl} `)) tokens.delete(key);
}

export function startedApps(): string[] {
  return [...started];
}
