// Test code only (imported by *.int.test.ts): a real runner service (`keyflow serve`) as a child
// process on a free port with its own folders, and the end of an integration test's world (the
// runner stopped, the throw-away schema dropped).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { Db } from "@keyflow/db";
import { PIPELINE_FORMAT } from "@keyflow/operators";

export const REPO = path.resolve(import.meta.dirname, "..", "..", "..", "..", "..");
export const KEYFLOW_BIN = path.join(REPO, "apps/runner/bin/keyflow.mjs");

export interface RunnerProcess {
  url: string;
  /** The bearer token it wants (also in this process's KEYFLOW_RUNNER_TOKEN, which the app's runner client reads). */
  token: string;
  /** The last 20 kB of its output, for failure messages. */
  log(): string;
  stop(): Promise<void>;
  /** Kills the process with `signal` (a crash: SIGKILL) and resolves once it is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `keyflow serve` on port 0 (it says which port it took) with checkpoints, data and state under
 * `dir`. The runner always wants a token: one per test process, set in KEYFLOW_RUNNER_TOKEN here too,
 * so the app's own calls (server/runner-client.ts) carry it as `npm start` arranges.
 */
export async function startRunnerProcess(dir: string, env: { DATABASE_URL: string; KAFKA_BROKERS: string }): Promise<RunnerProcess> {
  const token = (process.env.KEYFLOW_RUNNER_TOKEN ||= randomBytes(24).toString("base64url"));
  const child: ChildProcess = spawn(process.execPath, [KEYFLOW_BIN, "serve"], {
    cwd: REPO,
    env: {
      ...process.env,
      RUNNER_PORT: "0",
      RUNNER_HOST: "127.0.0.1",
      KEYFLOW_CHECKPOINT_ROOT: path.join(dir, "checkpoints"),
      KEYFLOW_DATA_DIR: path.join(dir, "data"),
      KEYFLOW_STATE_DIR: path.join(dir, "state"),
      KEYFLOW_RUNNER_TOKEN: token,
      KEYFLOW_LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (b: Buffer) => {
    output = (output + b.toString()).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const until = Date.now() + 60_000;
  let url: string | undefined;
  while (url === undefined) {
    if (child.exitCode !== null) throw new Error(`the runner exited with ${child.exitCode}: ${output}`);
    if (Date.now() > until) throw new Error(`the runner did not listen within 60 s: ${output}`);
    url = /runner listening on (http:\/\/[^\s]+)/.exec(output)?.[1];
    if (url === undefined) await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    token,
    log: () => output,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
    async kill(signal) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill(signal);
      await exited;
    },
  };
}

/** Drops the test's own schema and closes the database. */
export async function dropTestSchema(db: Db | undefined): Promise<void> {
  if (db?.driver.kind === "postgres" && db.driver.schema) await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${db.driver.schema}" CASCADE`);
  await db?.close();
}

/** A velocity rule on Kafka: payments keyed by card, an alert at the `threshold`-th payment within 10 minutes, written exactly once. */
export function velocityRule(name: string, threshold: number, input: string, output: string) {
  return {
    format: PIPELINE_FORMAT,
    name,
    settings: { checkpointIntervalMs: 300, parallelism: 1 },
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: input, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1000 } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" } },
      { id: "alerts", type: "sink.kafka", params: { topic: output, deliveryGuarantee: "exactly-once" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  };
}
