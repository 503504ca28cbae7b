// The web app under test: built once (`next build`, reused while its sources are unchanged) and
// served by its server process (Next behind apps/web/scripts/http-server.ts) on a free port. The
// database is the real PostgreSQL from DATABASE_URL
// (`npm test` starts it with scripts/services/start.sh), in a fresh schema per app dropped
// afterwards; without DATABASE_URL, an embedded PGlite in a fresh temporary folder, removed
// afterwards. Either way the app starts with no users and creates E2E_ADMIN as its first admin;
// launchBrowser() and apiClient() sign in through it (./auth.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createDb, parseDatabaseUrl } from "@keyflow/db";
import { ensureBuilt, startWebServer, type WebServer } from "@keyflow/web/process";
import { artifactLog } from "./artifacts";
import { E2E_ADMIN, registerApp, unregisterApp } from "./auth";
import { E2E_RUNNER_TOKEN } from "./runner";

/** DATABASE_URL with a schema of its own (`?schema=`), so every app starts with an empty database. */
function freshSchemaUrl(databaseUrl: string, name: string): { url: string; schema: string } {
  const url = new URL(parseDatabaseUrl(databaseUrl).connectionString);
  const schema = `kf_e2e_${name.replace(/[^A-Za-z0-9_]/g, "_")}_${process.pid}_${Date.now().toString(36)}`;
  url.searchParams.set("schema", schema);
  return { url: url.toString(), schema };
}

async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  const db = createDb({ databaseUrl });
  try {
    if (db.driver.kind === "postgres") await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await db.close();
  }
}

export interface WebApp {
  url: string;
  /** The server's process id (its own process group: ps -g). */
  pid: number;
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
  let schema: string | undefined;
  const env: Record<string, string | undefined> = { KEYFLOW_ADMIN_EMAIL: E2E_ADMIN.email, KEYFLOW_ADMIN_PASSWORD: E2E_ADMIN.password, KEYFLOW_ADMIN_NAME: E2E_ADMIN.name, KEYFLOW_RUNNER_TOKEN: E2E_RUNNER_TOKEN, ...opts.env };
  if (databaseUrl) {
    const fresh = freshSchemaUrl(databaseUrl, opts.name ?? "web");
    env.DATABASE_URL = fresh.url;
    schema = fresh.schema;
  } else {
    pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-e2e-pglite-"));
    env.KEYFLOW_PGLITE_DIR = pgliteDir;
  }
  let server: WebServer;
  try {
    server = await startWebServer({ env, log, ownProcessGroup: true, readyTimeoutMs: 90_000 });
  } catch (error) {
    if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
    if (databaseUrl && schema) await dropSchema(databaseUrl, schema).catch(() => undefined);
    throw new Error(`${error instanceof Error ? error.message : String(error)} (server log: ${logFile})`);
  }
  registerApp(server.url);
  return {
    url: server.url,
    pid: server.process.pid ?? 0,
    database: databaseUrl ? "postgres" : "pglite",
    buildMs: build.ms,
    built: build.built,
    logFile,
    async stop() {
      unregisterApp(server.url);
      await server.stop();
      if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
      if (databaseUrl && schema) await dropSchema(databaseUrl, schema).catch((error: unknown) => log(`could not drop schema ${schema}: ${String(error)}`));
    },
  };
}
