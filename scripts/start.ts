// `npm start`: Keyflow on embedded defaults. Starts the runner service (API and /metrics on
// :8081) and the web app (:3000, embedded PGlite unless DATABASE_URL is set), then seeds the
// example pipelines through the public API and deploys the first one on the demo source.
//
// Accounts: on the first start the web app creates the first admin (KEYFLOW_ADMIN_EMAIL, default
// admin@keyflow.local; password KEYFLOW_ADMIN_PASSWORD or generated and printed once, in the [web]
// lines). Seeding and the demo deployment are authenticated too: this script makes a random
// service token per start and hands it only to the web process it spawns (KEYFLOW_SERVICE_TOKEN);
// they are recorded in the audit trail as npm-start@keyflow.local.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pipelineDocumentSchema } from "@keyflow/operators";
import { RUNNER_NODE_FLAGS } from "@keyflow/runner/process-flags";
import { seedClient, seedPipeline, type ApiAuth } from "@keyflow/web/seed";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const webPort = Number(process.env.PORT ?? 3000);
const runnerPort = Number(process.env.RUNNER_PORT ?? 8081);
const runnerUrl = process.env.RUNNER_URL ?? `http://127.0.0.1:${runnerPort}`;
const webUrl = `http://127.0.0.1:${webPort}`;
const examplesDir = path.join(root, "examples", "pipelines");
const DEMO_PIPELINE = "card-velocity";
const serviceToken = randomBytes(32).toString("base64url");
const auth: ApiAuth = { serviceToken };
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", RUNNER_PORT: String(runnerPort), RUNNER_URL: runnerUrl, PORT: String(webPort) };
const webEnv = { ...env, KEYFLOW_SERVICE_TOKEN: serviceToken };

const children: ChildProcess[] = [];
function start(name: string, args: string[], childEnv: NodeJS.ProcessEnv = env): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = "";
    stream.on("data", (chunk) => {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        console.log(`[${name}] ${buffered.slice(0, nl)}`);
        buffered = buffered.slice(nl + 1);
      }
    });
  }
  child.on("exit", (code, signal) => {
    if (stopping) return;
    console.error(`[start] ${name} exited (${signal ?? code}); stopping Keyflow`);
    shutdown(1);
  });
  children.push(child);
  return child;
}

let stopping = false;
function shutdown(code: number): void {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill("SIGTERM");
  setTimeout(() => process.exit(code), 5_000).unref();
  Promise.all(children.map((c) => new Promise<void>((r) => (c.exitCode !== null ? r() : c.once("exit", () => r()))))).then(() => process.exit(code));
}
process.once("SIGINT", () => shutdown(0));
process.once("SIGTERM", () => shutdown(0));

async function waitFor(url: string, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    if (stopping) throw new Error(`${what} stopped before it was ready`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer on ${url} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The runner keeps no jobs across restarts yet, so the demo pipeline is deployed on every start. */
async function seedAndDeploy(): Promise<void> {
  let demoVersionId: string | undefined;
  for (const file of fs.readdirSync(examplesDir).filter((f) => f.endsWith(".json")).sort()) {
    const document = pipelineDocumentSchema.parse(JSON.parse(fs.readFileSync(path.join(examplesDir, file), "utf8")));
    const seeded = await seedPipeline({ url: webUrl, auth, document, message: "Seeded by npm start" });
    if (seeded.created) console.log(`[start] seeded pipeline "${document.name}" (version ${seeded.versionNumber})`);
    if (document.name === DEMO_PIPELINE) demoVersionId = seeded.versionId;
  }
  const token = process.env.KEYFLOW_RUNNER_TOKEN;
  const jobs: unknown = await (await fetch(`${runnerUrl}/jobs`, token ? { headers: { authorization: `Bearer ${token}` } } : {})).json();
  const list = (Array.isArray(jobs) ? jobs : ((jobs as { jobs?: unknown[] }).jobs ?? [])) as Array<{ status?: string }>;
  if (list.some((job) => job.status === "running")) return;
  if (!demoVersionId) throw new Error(`the example pipeline "${DEMO_PIPELINE}" is missing from ${examplesDir}`);
  await seedClient(webUrl, auth).deployment.deploy.mutate({ versionId: demoVersionId, mode: "shadow" });
  console.log(`[start] deployed "${DEMO_PIPELINE}" on the demo source`);
}

try {
  start("runner", [...RUNNER_NODE_FLAGS, "apps/runner/bin/keyflow.mjs", "serve"]);
  start("web", ["--import", "tsx", "apps/web/scripts/serve.ts"], webEnv);
  await waitFor(`${runnerUrl}/healthz`, "the runner", 60_000);
  await waitFor(`${webUrl}/api/health`, "the web app", 600_000);
  await seedAndDeploy();
  console.log("");
  console.log(`Keyflow is running: open http://localhost:${webPort}`);
  console.log(`  runner API and Prometheus metrics: ${runnerUrl} (/metrics)`);
  console.log(`  database: ${process.env.DATABASE_URL ? "DATABASE_URL" : "embedded PGlite in .keyflow/pglite"}; Kafka: ${process.env.KAFKA_BROKERS ?? "not configured (demo source and file sinks)"}`);
  console.log(`  sign in as ${process.env.KEYFLOW_ADMIN_EMAIL ?? "admin@keyflow.local"} (the password was printed on the first start, or KEYFLOW_ADMIN_PASSWORD)`);
  console.log("  Ctrl-C stops everything.");
} catch (error) {
  console.error(`[start] ${error instanceof Error ? error.message : String(error)}`);
  shutdown(1);
}
