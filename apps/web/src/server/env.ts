// The one place apps/web reads process.env (server only). DATABASE_URL and KEYFLOW_PGLITE_DIR are
// read by @keyflow/db's createDb(), which owns the choice between PostgreSQL and embedded PGlite.
export interface ServerEnv {
  /** The runner's HTTP API (POST /jobs, GET /jobs/:id). */
  runnerUrl: string;
}

export function serverEnv(): ServerEnv {
  return {
    runnerUrl: (process.env.RUNNER_URL ?? "http://localhost:8081").replace(/\/+$/, ""),
  };
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
