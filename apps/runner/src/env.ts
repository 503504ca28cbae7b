// The one module that reads the runner's environment. Everything else receives a RunnerEnv, so
// tests and the service can pass their own values and no code path reads process.env by surprise.
import path from "node:path";
import { z } from "zod";

const envSchema = z.object({
  KAFKA_BROKERS: z.string().optional(),
  RUNNER_PORT: z.coerce.number().int().min(0).max(65_535).default(8081),
  RUNNER_HOST: z.string().min(1).default("127.0.0.1"),
  /** Bearer token the job-control API requires (all but /healthz and /metrics); unset: `keyflow serve` generates one. */
  KEYFLOW_RUNNER_TOKEN: z.string().min(16, { error: "must be at least 16 characters" }).optional(),
  /** Host names (comma-separated) the API answers besides localhost, 127.0.0.1, [::1] and RUNNER_HOST. */
  KEYFLOW_RUNNER_ALLOWED_HOSTS: z.string().optional(),
  /** Concurrent metric streams (SSE), in all and per client address. */
  KEYFLOW_RUNNER_MAX_STREAMS: z.coerce.number().int().min(1).default(256),
  KEYFLOW_RUNNER_MAX_STREAMS_PER_CLIENT: z.coerce.number().int().min(1).default(32),
  /** The runner's own files (the generated token); default .keyflow. */
  KEYFLOW_STATE_DIR: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  /** Where the service keeps each job's checkpoints (one folder per job). */
  KEYFLOW_CHECKPOINT_ROOT: z.string().optional(),
  /** Folder against which the service resolves relative file paths of deployed pipelines. */
  KEYFLOW_DATA_DIR: z.string().optional(),
  KEYFLOW_LOG_LEVEL: z.enum(["error", "warn", "info", "debug"]).default("info"),
  /** process.custom: CPU budget of one call of the user's code, ms (default 50). */
  KEYFLOW_SANDBOX_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).optional(),
  /** process.custom: heap limit of the user's code, MB (default 64). */
  KEYFLOW_SANDBOX_MEMORY_MB: z.coerce.number().int().min(8).max(4_096).optional(),
  /** Tests: every heap snapshot checks the columns it kept against the state (costs a full pack). */
  KEYFLOW_VERIFY_SNAPSHOTS: z.enum(["0", "1"]).default("0"),
});

export type LogLevel = "error" | "warn" | "info" | "debug";

export interface RunnerEnv {
  /** Bootstrap brokers from KAFKA_BROKERS (comma-separated host:port); undefined when unset. */
  kafkaBrokers: readonly string[] | undefined;
  runnerPort: number;
  runnerHost: string;
  /** KEYFLOW_RUNNER_TOKEN; undefined: the service generates one into `<stateDir>/runner-token`. */
  runnerToken?: string;
  /** Host header names answered besides loopback's and runnerHost (KEYFLOW_RUNNER_ALLOWED_HOSTS), lower case, no port. */
  allowedHosts?: readonly string[];
  /** KEYFLOW_RUNNER_MAX_STREAMS / _PER_CLIENT: concurrent metric streams; beyond them, 429. */
  maxStreams?: number;
  maxStreamsPerClient?: number;
  /** KEYFLOW_STATE_DIR (default .keyflow): where `runner-token` is written when no token is set. */
  stateDir?: string;
  databaseUrl: string | undefined;
  checkpointRoot: string;
  dataDir: string;
  logLevel: LogLevel;
  /** process.custom's per-call timeout (KEYFLOW_SANDBOX_TIMEOUT_MS); undefined: the sandbox's default. */
  sandboxTimeoutMs?: number;
  /** process.custom's memory limit (KEYFLOW_SANDBOX_MEMORY_MB); undefined: the sandbox's default. */
  sandboxMemoryLimitMb?: number;
  /** KEYFLOW_VERIFY_SNAPSHOTS=1 (tests): heap snapshots verify their kept columns (@keyflow/operators' setKeptColumnsVerification). */
  verifySnapshots?: boolean;
}

export class EnvError extends Error {}

/** Reads and checks the environment once; a bad value names the variable. */
export function readEnv(source: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): RunnerEnv {
  const parsed = envSchema.safeParse(source);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `environment variable ${String(i.path[0])}: ${i.message}`);
    throw new EnvError(lines.join("\n"));
  }
  const e = parsed.data;
  const brokers = e.KAFKA_BROKERS?.split(",").map((b) => b.trim()).filter((b) => b !== "");
  const dataDir = path.resolve(cwd, e.KEYFLOW_DATA_DIR ?? ".keyflow/data");
  return {
    kafkaBrokers: brokers && brokers.length > 0 ? brokers : undefined,
    runnerPort: e.RUNNER_PORT,
    runnerHost: e.RUNNER_HOST,
    ...(e.KEYFLOW_RUNNER_TOKEN !== undefined && e.KEYFLOW_RUNNER_TOKEN !== "" ? { runnerToken: e.KEYFLOW_RUNNER_TOKEN } : {}),
    allowedHosts: (e.KEYFLOW_RUNNER_ALLOWED_HOSTS ?? "").split(",").map((h) => h.trim().toLowerCase()).filter((h) => h !== ""),
    maxStreams: e.KEYFLOW_RUNNER_MAX_STREAMS,
    maxStreamsPerClient: e.KEYFLOW_RUNNER_MAX_STREAMS_PER_CLIENT,
    stateDir: path.resolve(cwd, e.KEYFLOW_STATE_DIR ?? ".keyflow"),
    databaseUrl: e.DATABASE_URL === "" ? undefined : e.DATABASE_URL,
    checkpointRoot: path.resolve(cwd, e.KEYFLOW_CHECKPOINT_ROOT ?? ".keyflow/checkpoints"),
    dataDir,
    logLevel: e.KEYFLOW_LOG_LEVEL,
    ...(e.KEYFLOW_SANDBOX_TIMEOUT_MS !== undefined ? { sandboxTimeoutMs: e.KEYFLOW_SANDBOX_TIMEOUT_MS } : {}),
    ...(e.KEYFLOW_SANDBOX_MEMORY_MB !== undefined ? { sandboxMemoryLimitMb: e.KEYFLOW_SANDBOX_MEMORY_MB } : {}),
    ...(e.KEYFLOW_VERIFY_SNAPSHOTS === "1" ? { verifySnapshots: true } : {}),
  };
}
