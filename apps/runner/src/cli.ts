// The `keyflow` command line: validate and run pipeline files, and serve the runner's HTTP API.
// User mistakes (a bad file, an invalid pipeline, a failing job) print one line per problem on
// stderr and exit non-zero, without a stack trace.
import path from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { setKeptColumnsVerification } from "@keyflow/operators";

type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig["options"]>;
import { EnvError, readEnv, type RunnerEnv } from "./env";
import { createJobDriver } from "./job/create";
import { formatSummary } from "./job/summary";
import { createLogger, errorMessage } from "./log";
import { loadPipelineFile } from "./pipeline/load";
import { readRunnerToken } from "./service/token";

const USAGE = `usage:
  keyflow validate <pipeline.json>
  keyflow run <pipeline.json> [--checkpoint-dir DIR] [--parallelism N] [--state-backend heap|disk] [--job-id ID]
              [--restore PATH [--allow-non-restored-state]] [--allow-paths DIR]
  keyflow serve [--port N] [--deploy <pipeline.json>]...
  keyflow savepoint <jobId> [--runner URL] [--dir DIR] [--stop]
  keyflow restore <savepointPath> <pipeline.json> [--runner URL] [--job-id ID] [--parallelism N] [--allow-non-restored-state]
  keyflow resume <deploymentId> [--web URL] [--savepoint PATH] [--allow-non-restored-state] [--reason TEXT]

  validate  check a keyflow.pipeline/v1 file; one line per problem, naming the node
  run       run a pipeline: bounded sources (files, bounded Kafka) to the end, others until Ctrl-C;
            with --checkpoint-dir, a second run resumes from the newest checkpoint there
            --restore starts from a checkpoint or savepoint folder instead
            file paths are relative to the pipeline file's folder and stay inside it; --allow-paths DIR
            allows any path inside DIR instead (absolute ones included)
  serve     the runner service: job API and Prometheus /metrics on port 8081 (RUNNER_PORT)
  savepoint take a savepoint of a job of the running service (--stop: and stop the job); prints its path
  restore   deploy a pipeline on the running service from a savepoint, at --parallelism N (a rescale)
  resume    start a stopped deployment again from its last checkpoint (or --savepoint), through the web app
            (KEYFLOW_WEB_URL; signed in as KEYFLOW_EMAIL / KEYFLOW_PASSWORD: the role check and audit apply)

environment: KAFKA_BROKERS (host:port,...), RUNNER_PORT, KEYFLOW_RUNNER_URL (default http://127.0.0.1:RUNNER_PORT),
             KEYFLOW_LOG_LEVEL (error|warn|info|debug), KEYFLOW_STATE_BACKEND (heap|disk, as --state-backend),
             KEYFLOW_STATE_DIR (where disk-backend stores live; default the system's temporary folder)`;

/** Exit codes: 0 ok, 1 invalid input or failed job, 2 bad usage, 130 interrupted twice. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(USAGE + "\n");
    return command === undefined ? 2 : 0;
  }
  let env: RunnerEnv;
  try {
    env = readEnv();
  } catch (err) {
    if (err instanceof EnvError) {
      process.stderr.write(err.message + "\n");
      return 2;
    }
    throw err;
  }
  if (env.verifySnapshots) setKeptColumnsVerification(true);
  try {
    switch (command) {
      case "validate":
        return await validateCommand(rest);
      case "run":
        return await runCommand(rest, env);
      case "savepoint":
        return await savepointCommand(rest, env);
      case "restore":
        return await restoreCommand(rest, env);
      case "serve":
        return await serveCommand(rest, env);
      case "audit": return await (await import("./audit/verify")).auditCommand(rest); // keyflow audit verify [--database-url URL]
      case "resume":
        return await (await import("./web-api/resume")).resumeCommand(rest);
      default:
        return usageError(`unknown command "${command}"`);
    }
  } catch (err) {
    if (err instanceof UsageError) return usageError(err.message);
    throw err;
  }
}

class UsageError extends Error {}

function usageError(message: string): number {
  process.stderr.write(`keyflow: ${message}\n\n${USAGE}\n`);
  return 2;
}

function parse<const O extends ParseArgsOptionsConfig>(args: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
}

function onePipelineFile(positionals: string[], command: string): string {
  if (positionals.length !== 1 || positionals[0] === undefined) throw new UsageError(`${command} takes exactly one pipeline file`);
  return positionals[0];
}

async function validateCommand(args: readonly string[]): Promise<number> {
  const { positionals } = parse(args, {});
  const file = onePipelineFile(positionals, "validate");
  const loaded = await loadPipelineFile(file);
  if (!loaded.ok) {
    process.stderr.write(loaded.problems.join("\n") + "\n");
    return 1;
  }
  for (const w of loaded.warnings) process.stderr.write(w + "\n");
  const { doc } = loaded;
  process.stdout.write(`${file}: pipeline "${doc.name}" is valid (${doc.nodes.length} nodes, ${doc.edges.length} edges)\n`);
  return 0;
}

async function runCommand(args: readonly string[], env: RunnerEnv): Promise<number> {
  const { values, positionals } = parse(args, {
    "checkpoint-dir": { type: "string" },
    parallelism: { type: "string" },
    "state-backend": { type: "string" },
    "job-id": { type: "string" },
    "checkpoint-interval": { type: "string" },
    restore: { type: "string" },
    "allow-non-restored-state": { type: "boolean" },
    "allow-paths": { type: "string" },
  });
  const file = onePipelineFile(positionals, "run");
  // The data folder is the pipeline file's; --allow-paths DIR: the runner confines paths to DIR instead of the validator to relative ones.
  const allowPaths = values["allow-paths"] !== undefined ? path.resolve(values["allow-paths"]) : undefined;
  const loaded = await loadPipelineFile(file, process.cwd(), allowPaths !== undefined ? { anyFilePaths: true } : undefined);
  if (!loaded.ok) {
    process.stderr.write(loaded.problems.join("\n") + "\n");
    return 1;
  }
  const log = createLogger(env.logLevel, "");
  for (const w of loaded.warnings) process.stderr.write(w + "\n");
  const doc = structuredClone(loaded.doc);
  if (values.parallelism !== undefined) {
    const n = Number(values.parallelism);
    if (!Number.isInteger(n) || n < 1 || n > doc.settings.maxParallelism) throw new UsageError(`--parallelism must be an integer from 1 to ${doc.settings.maxParallelism}`);
    doc.settings.parallelism = n;
  }
  // KEYFLOW_STATE_BACKEND: the same for every run of a shell (the golden suite on the disk backend).
  const backend = values["state-backend"] ?? process.env.KEYFLOW_STATE_BACKEND;
  if (backend !== undefined) {
    const b = backend;
    if (b !== "heap" && b !== "disk") throw new UsageError(`--state-backend (or KEYFLOW_STATE_BACKEND) must be "heap" or "disk"`);
    doc.settings.stateBackend = b;
  }
  let checkpointIntervalMs: number | undefined;
  if (values["checkpoint-interval"] !== undefined) {
    checkpointIntervalMs = Number(values["checkpoint-interval"]);
    if (!Number.isInteger(checkpointIntervalMs) || checkpointIntervalMs < 1) throw new UsageError("--checkpoint-interval is a positive number of milliseconds");
  }
  const checkpointDir = values["checkpoint-dir"] !== undefined ? path.resolve(values["checkpoint-dir"]) : undefined;

  const driver = createJobDriver({
    doc,
    jobId: values["job-id"] ?? doc.name,
    baseDir: loaded.baseDir,
    ...(allowPaths !== undefined ? { fileRoot: allowPaths } : {}),
    env,
    log: log.child(doc.name),
    ...(checkpointDir !== undefined ? { checkpointDir } : {}),
    ...(checkpointIntervalMs !== undefined ? { checkpointIntervalMs } : {}),
    ...(values.restore !== undefined ? { restoreFrom: path.resolve(values.restore) } : {}),
    ...(values["allow-non-restored-state"] ? { allowNonRestoredState: true } : {}),
  });
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 1) {
      process.stderr.write(`keyflow: ${signal} again, exiting without a final checkpoint\n`);
      process.exit(130);
    }
    process.stderr.write(`keyflow: ${signal}: stopping after a final checkpoint (again to exit at once)\n`);
    driver.stop(`stopped by ${signal}`);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const summary = await driver.run();
    process.stdout.write(formatSummary(summary) + "\n");
    return 0;
  } catch (err) {
    process.stderr.write(`keyflow run: ${file}: ${errorMessage(err)}\n`);
    // Where it was thrown, for the platform engineer reading a debug log (a broker's error says what, not where).
    if (env.logLevel === "debug" && err instanceof Error && err.stack !== undefined) process.stderr.write(`${err.stack}\n`);
    return 1;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The running service's base URL: --runner, else KEYFLOW_RUNNER_URL, else this machine's RUNNER_PORT. */
function runnerUrl(flag: string | undefined, env: RunnerEnv): string {
  return (flag ?? process.env.KEYFLOW_RUNNER_URL ?? `http://127.0.0.1:${env.runnerPort}`).replace(/\/+$/, "");
}

/** Calls the runner's API; an unreachable runner or an error answer prints one line and yields undefined. */
async function callRunner(base: string, method: string, url: string, body: unknown, command: string, env: RunnerEnv): Promise<Record<string, unknown> | undefined> {
  let res: Response;
  try {
    // The runner's token: KEYFLOW_RUNNER_TOKEN, else the file a local `keyflow serve` generated.
    const token = process.env.KEYFLOW_RUNNER_TOKEN || (env.stateDir !== undefined ? await readRunnerToken(env.stateDir) : undefined);
    const headers: Record<string, string> = { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
    res = await fetch(`${base}${url}`, { method, headers, body: JSON.stringify(body) });
  } catch (err) {
    process.stderr.write(`keyflow ${command}: the runner at ${base} does not answer (${errorMessage(err)}); start it with \`keyflow serve\` or pass --runner URL\n`);
    return undefined;
  }
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const issues = Array.isArray(json.issues) ? json.issues.map(String) : [];
    process.stderr.write(`keyflow ${command}: ${String(json.error ?? `HTTP ${res.status}`)}\n${issues.map((i) => `  ${i}\n`).join("")}`);
    return undefined;
  }
  return json;
}

async function savepointCommand(args: readonly string[], env: RunnerEnv): Promise<number> {
  const { values, positionals } = parse(args, { runner: { type: "string" }, dir: { type: "string" }, stop: { type: "boolean" } });
  if (positionals.length !== 1 || positionals[0] === undefined) throw new UsageError("savepoint takes exactly one job id");
  const jobId = encodeURIComponent(positionals[0]);
  const body = values.dir !== undefined ? { dir: path.resolve(values.dir) } : {};
  const url = values.stop ? `/jobs/${jobId}/stop?savepoint=true` : `/jobs/${jobId}/savepoint`;
  const json = await callRunner(runnerUrl(values.runner, env), "POST", url, body, "savepoint", env);
  if (!json) return 1;
  process.stdout.write(`${String(json.path ?? json.savepointPath)}\n`);
  return 0;
}

async function restoreCommand(args: readonly string[], env: RunnerEnv): Promise<number> {
  const { values, positionals } = parse(args, {
    runner: { type: "string" },
    "job-id": { type: "string" },
    parallelism: { type: "string" },
    "allow-non-restored-state": { type: "boolean" },
  });
  const [savepoint, file] = positionals;
  if (positionals.length !== 2 || savepoint === undefined || file === undefined) throw new UsageError("restore takes a savepoint folder and a pipeline file");
  const loaded = await loadPipelineFile(file);
  if (!loaded.ok) {
    process.stderr.write(loaded.problems.join("\n") + "\n");
    return 1;
  }
  let parallelism: number | undefined;
  if (values.parallelism !== undefined) {
    parallelism = Number(values.parallelism);
    if (!Number.isInteger(parallelism) || parallelism < 1) throw new UsageError("--parallelism must be a positive integer");
  }
  const deploymentId = values["job-id"] ?? loaded.doc.name;
  const json = await callRunner(
    runnerUrl(values.runner, env),
    "POST",
    "/jobs",
    {
      deploymentId,
      pipeline: loaded.doc,
      restoreFrom: path.resolve(savepoint),
      ...(parallelism !== undefined ? { parallelism } : {}),
      ...(values["allow-non-restored-state"] ? { allowNonRestoredState: true } : {}),
    },
    "restore",
    env,
  );
  if (!json) return 1;
  process.stdout.write(`job "${deploymentId}" deployed from ${path.resolve(savepoint)}${parallelism !== undefined ? ` at parallelism ${parallelism}` : ""} (${String(json.status)})\n`);
  return 0;
}

async function serveCommand(args: readonly string[], env: RunnerEnv): Promise<number> {
  const { values } = parse(args, { port: { type: "string" }, deploy: { type: "string", multiple: true } });
  const { startRunnerService } = await import("./service/main");
  let port = env.runnerPort;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError("--port must be a TCP port number");
  }
  return startRunnerService({ env: { ...env, runnerPort: port }, deployFiles: values.deploy ?? [] });
}

const code = await main(process.argv.slice(2));
// Kafka clients and timers may hold the event loop; the command is done, so leave now (after stdout drains).
process.stdout.write("", () => process.exit(code));
