// The one place apps/web reads process.env (server only). DATABASE_URL and KEYFLOW_PGLITE_DIR are
// read by @keyflow/db's createDb(), which owns the choice between PostgreSQL and embedded PGlite.
export interface ServerEnv {
  /** The runner's HTTP API (POST /jobs, GET /jobs/:id). */
  runnerUrl: string;
  /** KEYFLOW_RUNNER_TOKEN: the runner's bearer token, sent on every call (the runner always wants one; `npm start` hands it over). */
  runnerToken?: string | undefined;
  /** KAFKA_BROKERS: the shadow/enforcement comparison reads alert topics there; unset, it says so. */
  kafkaBrokers?: string[] | undefined;
  /** KEYFLOW_SHADOW_POLICY_DAYS (default 14): days in shadow before a promotion needs no written reason. */
  shadowPolicyDays?: number;
  /** KEYFLOW_NOTIFY_WEBHOOK: approvers' notifications are also POSTed there as JSON; unset: in the app only. */
  notifyWebhook?: string | undefined;
}

export function serverEnv(): ServerEnv {
  return {
    runnerUrl: (process.env.RUNNER_URL ?? "http://localhost:8081").replace(/\/+$/, ""),
    runnerToken: process.env.KEYFLOW_RUNNER_TOKEN || undefined,
    kafkaBrokers: process.env.KAFKA_BROKERS ? process.env.KAFKA_BROKERS.split(",").map((b) => b.trim()).filter(Boolean) : undefined,
    shadowPolicyDays: shadowPolicyDays(process.env.KEYFLOW_SHADOW_POLICY_DAYS),
    notifyWebhook: notifyWebhook(process.env.KEYFLOW_NOTIFY_WEBHOOK),
  };
}

function shadowPolicyDays(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return 14;
  const days = Number(raw);
  if (!Number.isFinite(days) || days < 0) throw new Error(`KEYFLOW_SHADOW_POLICY_DAYS must be a number of days (0 or more), not "${raw}"`);
  return days;
}

function notifyWebhook(raw: string | undefined): string | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new Error(`KEYFLOW_NOTIFY_WEBHOOK must be an http(s) URL, not "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`KEYFLOW_NOTIFY_WEBHOOK must be an http(s) URL, not "${raw}"`);
  return url.toString();
}

/** Accounts on setup and the service token of `npm start` (see auth/bootstrap.ts). */
export interface AuthEnv {
  /** The first admin, created when the users table is empty. */
  adminEmail: string;
  adminName: string;
  /** Unset: a password is generated and printed once, on the start that creates the admin. */
  adminPassword: string | undefined;
  /**
   * A secret shared by `npm start` (scripts/start.ts) with the web process it spawns, so its seeding
   * and demo deployment are authenticated as the service user `npm-start`. Unset: no service access.
   */
  serviceToken: string | undefined;
}

export function authEnv(): AuthEnv {
  return {
    adminEmail: (process.env.KEYFLOW_ADMIN_EMAIL ?? "admin@keyflow.local").trim().toLowerCase(),
    adminName: process.env.KEYFLOW_ADMIN_NAME ?? "Administrator",
    adminPassword: process.env.KEYFLOW_ADMIN_PASSWORD || undefined,
    serviceToken: process.env.KEYFLOW_SERVICE_TOKEN || undefined,
  };
}
