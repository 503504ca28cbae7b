// The web app under test: built once (`next build`, reused while its sources are unchanged) and
// served with `next start` on a free port. The database is the real PostgreSQL from DATABASE_URL
// (`npm test` starts it with scripts/services/start.sh); without DATABASE_URL, an embedded PGlite
// in a fresh temporary folder, removed afterwards.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureBuilt, startWebServer, type WebServer } from "@keyflow/web/process";
import { artifactLog } from "./artifacts";

export interface WebApp {
  url: string;
  database: "postgres" | "pglite";
  buildMs: number;
  built: boolean;
  logFile: string;
  stop(): Promise<void>;
}

export async function startWebApp(opts: { name?: string; env?: Record<string, string | undefined> } = {}): Promise<WebApp> {
  const { log, path: logFile } = artifactLog(`${opts.name ?? "web"}-server.log`);
  const build = await ensureBuilt({ log });
  log(`build: ${build.built ? `built in ${build.ms} ms` : "reused"}`);

  const databaseUrl = process.env.DATABASE_URL;
  let pgliteDir: string | undefined;
  const env: Record<string, string | undefined> = { ...opts.env };
  if (databaseUrl) {
    env.DATABASE_URL = databaseUrl;
  } else {
    pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-e2e-pglite-"));
    env.KEYFLOW_PGLITE_DIR = pgliteDir;
  }
  let server: WebServer;
  try {
    server = await startWebServer({ env, log, ownProcessGroup: true, readyTimeoutMs: 90_000 });
  } catch (error) {
    if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
    throw new Error(`${error instanceof Error ? error.message : String(error)} (server log: ${logFile})`);
  }
  return {
    url: server.url,
    database: databaseUrl ? "postgres" : "pglite",
    buildMs: build.ms,
    built: build.built,
    logFile,
    async stop() {
      await server.stop();
      if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
    },
  };
}
