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
