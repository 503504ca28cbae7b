// Starts the runner service: the job manager, the HTTP API on RUNNER_PORT (8081), optional
// pipelines deployed at start (`keyflow serve --deploy file.json`, what `npm start` uses for the
// example pipeline), and a graceful shutdown on SIGINT/SIGTERM (every job takes a final checkpoint).
import path from "node:path";
import type { Server } from "node:http";
import { setKeptColumnsVerification } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import { createLogger, errorMessage, type Logger } from "../log";
import { loadPipelineFile } from "../pipeline/load";
import { createRunnerServer } from "./http";
import { JobManager } from "./jobs";
import { PostgresJobReporter } from "./postgres-reporter";
import { createMetricsRegistry } from "./metrics";
import { generateRunnerToken } from "./token";

export interface RunnerService {
  server: Server;
  jobs: JobManager;
  /** The bound port (useful with RUNNER_PORT=0). */
  port: number;
  url: string;
  /** The bearer token the API wants: KEYFLOW_RUNNER_TOKEN, else the one generated at this start. */
  token: string;
  close(): Promise<void>;
}

export async function createRunnerService(env: RunnerEnv, log: Logger = createLogger(env.logLevel), opts: { checkpointIntervalMs?: number } = {}): Promise<RunnerService> {
  // With DATABASE_URL, deployments' status and checkpoints are recorded in Postgres. (The embedded
  // PGlite of `npm start` belongs to the web app's process, so without DATABASE_URL nothing is.)
  let db: { close(): Promise<void> } | undefined;
  let reporter: PostgresJobReporter | undefined;
  if (env.databaseUrl) {
    const { auditTrailExposure, createDb, migrateAsOwner } = await import("@keyflow/db");
    const opened = createDb({ databaseUrl: env.databaseUrl, pool: { max: 4 } });
    db = opened;
    // The runner may start before the web app has ever opened this database: apply the committed
    // migrations itself (idempotent, and safe against a concurrent migrator).
    // Issue 35 point 9: as the owner (KEYFLOW_MIGRATE_DATABASE_URL when set); the runner itself
    // connects as keyflow_app, and a role that could rewrite the audit trail is warned about.
    const applied = await migrateAsOwner(opened);
    if (applied.applied.length > 0) log.info(`applied migrations: ${applied.applied.join(", ")}`);
    const exposure = await auditTrailExposure(opened);
    if (exposure) log.warn(exposure);
    reporter = new PostgresJobReporter(opened.prisma, log.child("postgres"));
  }
  // Always a token: without KEYFLOW_RUNNER_TOKEN, a fresh one per start, in a file only this user reads.
  let token = env.runnerToken;
  if (token === undefined) {
    const generated = await generateRunnerToken(env.stateDir ?? path.resolve(".keyflow")).catch(async (err: unknown) => {
      await db?.close();
      throw err;
    });
    token = generated.token;
    log.info(`no KEYFLOW_RUNNER_TOKEN: generated the API's bearer token into ${generated.file} (0600); clients send it as Authorization: Bearer <token>`);
  }
  const jobs = new JobManager(env, log, { ...opts, ...(reporter ? { events: reporter } : {}) });
  const registry = createMetricsRegistry(jobs);
  const server = createRunnerServer({ jobs, registry, env: { ...env, runnerToken: token }, log });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(env.runnerPort, env.runnerHost, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    await db?.close();
    throw err;
  }
  const address = server.address();
  const port = address !== null && typeof address === "object" ? address.port : env.runnerPort;
  const host = env.runnerHost === "0.0.0.0" || env.runnerHost === "::" ? "localhost" : env.runnerHost;
  return {
    server,
    jobs,
    port,
    url: `http://${host}:${port}`,
    token,
    async close() {
      await jobs.stopAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await reporter?.flush();
      await db?.close();
    },
  };
}

/** `keyflow serve`: runs until SIGINT/SIGTERM; returns the exit code. */
export async function startRunnerService(o: { env: RunnerEnv; deployFiles: readonly string[] }): Promise<number> {
  const log = createLogger(o.env.logLevel);
  if (o.env.verifySnapshots) setKeptColumnsVerification(true);
  // A job's failure must never end the service: anything that escapes a job is logged, not fatal.
  process.on("unhandledRejection", (reason) => log.error(`unhandled rejection: ${errorMessage(reason)}`));
  process.on("uncaughtException", (err) => log.error(`uncaught exception: ${err.stack ?? errorMessage(err)}`));
  // Once whatever read stdout/stderr has gone (a supervisor that died), every write fails with EPIPE.
  // Unheard, each failure was an uncaught exception, logged to stderr, failing again: a loop that
  // kept a stopping runner busy and alive. The logs have nowhere to go; the runner goes on without them.
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);

  let service: RunnerService;
  try {
    service = await createRunnerService(o.env, log);
  } catch (err) {
    process.stderr.write(`keyflow serve: cannot listen on ${o.env.runnerHost}:${o.env.runnerPort}: ${errorMessage(err)}\n`);
    return 1;
  }
  log.info(`runner listening on ${service.url} (GET /metrics, /jobs)`);

  for (const file of o.deployFiles) {
    const loaded = await loadPipelineFile(file);
    if (!loaded.ok) {
      process.stderr.write(loaded.problems.join("\n") + "\n");
      await service.close();
      return 1;
    }
    const id = path.basename(file).replace(/\.json$/i, "").replace(/[^A-Za-z0-9._-]/g, "-");
    service.jobs.deploy(id, loaded.doc);
    log.info(`deployed ${file} as job "${id}"`);
  }

  return new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        process.stderr.write(`keyflow serve: ${signal} again, exiting at once\n`);
        process.exit(130);
      }
      stopping = true;
      log.info(`${signal}: stopping every job after a final checkpoint`);
      service.close().then(
        () => resolve(0),
        (err: unknown) => {
          log.error(errorMessage(err));
          resolve(1);
        },
      );
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}
