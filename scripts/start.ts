// `npm start`: Keyflow on embedded defaults. Starts the runner service (API and /metrics on
// :8081) and the web app (:3000, embedded PGlite unless DATABASE_URL is set) under a supervisor
// (./supervise.ts: a child that exits is restarted with backoff, the other keeps serving), then
// seeds the example pipelines through the public API and deploys the demo pipeline once: after
// that the database holds it as a deployment that should run, and the web app's reconciler brings
// it back from its checkpoints whenever the runner comes back.
//
// Accounts: on the first start the web app creates the first admin (KEYFLOW_ADMIN_EMAIL, default
// admin@keyflow.local; password KEYFLOW_ADMIN_PASSWORD or generated and printed once, in the [web]
// lines). Seeding and the demo deployment are authenticated too: this script makes a random
// service token per start and hands it only to the web process it spawns (KEYFLOW_SERVICE_TOKEN);
// they are recorded in the audit trail as npm-start@keyflow.local. The runner's bearer token
// (KEYFLOW_RUNNER_TOKEN) is random per start too unless set, and given to the runner and the web app.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { pipelineDocumentSchema } from "@keyflow/operators";
import { RUNNER_NODE_FLAGS } from "@keyflow/runner/process-flags";
import { seedClient, seedPipeline, type ApiAuth } from "@keyflow/web/seed";
import { supervise } from "./supervise";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const webPort = Number(process.env.PORT ?? 3000);
const runnerPort = Number(process.env.RUNNER_PORT ?? 8081);
const runnerUrl = process.env.RUNNER_URL ?? `http://127.0.0.1:${runnerPort}`;
const webUrl = `http://127.0.0.1:${webPort}`;
const examplesDir = path.join(root, "examples", "pipelines");
const DEMO_PIPELINE = "card-velocity";
const serviceToken = randomBytes(32).toString("base64url");
const runnerToken = process.env.KEYFLOW_RUNNER_TOKEN || randomBytes(32).toString("base64url");
const auth: ApiAuth = { serviceToken };
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", RUNNER_PORT: String(runnerPort), RUNNER_URL: runnerUrl, PORT: String(webPort), KEYFLOW_RUNNER_TOKEN: runnerToken };
const webEnv = { ...env, KEYFLOW_SERVICE_TOKEN: serviceToken };

const supervisor = supervise([
  { name: "runner", args: [...RUNNER_NODE_FLAGS, "apps/runner/bin/keyflow.mjs", "serve"], env, cwd: root },
  { name: "web", args: ["--import", "tsx", "apps/web/scripts/serve.ts"], env: webEnv, cwd: root },
]);

let stopping = false;
function shutdown(code: number): void {
  if (stopping) return;
  stopping = true;
  supervisor.stop().then(() => process.exit(code), () => process.exit(code));
}
process.once("SIGINT", () => shutdown(0));
process.once("SIGTERM", () => shutdown(0));

async function waitFor(url: string, what: string, timeoutMs: number, headers: Record<string, string> = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { headers });
      if (res.ok) return;
    } catch {
      // not up yet
    }
    if (stopping) throw new Error(`${what} stopped before it was ready`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer on ${url} within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Seeds the examples; deploys the demo pipeline only if it was never deployed (afterwards the reconciler keeps it running, or stopped if someone stopped it). */
async function seedAndDeploy(): Promise<void> {
  let demo: { pipelineId: string; versionId: string } | undefined;
  for (const file of fs.readdirSync(examplesDir).filter((f) => f.endsWith(".json")).sort()) {
    const document = pipelineDocumentSchema.parse(JSON.parse(fs.readFileSync(path.join(examplesDir, file), "utf8")));
    const seeded = await seedPipeline({ url: webUrl, auth, document, message: "Seeded by npm start" });
    if (seeded.created) console.log(`[start] seeded pipeline "${document.name}" (version ${seeded.versionNumber})`);
    if (document.name === DEMO_PIPELINE) demo = seeded;
  }
  if (!demo) throw new Error(`the example pipeline "${DEMO_PIPELINE}" is missing from ${examplesDir}`);
  const api = seedClient(webUrl, auth);
  if ((await api.pipeline.get.query({ id: demo.pipelineId })).deployments.length > 0) return;
  await api.deployment.deploy.mutate({ versionId: demo.versionId, mode: "shadow" });
  console.log(`[start] deployed "${DEMO_PIPELINE}" on the demo source`);
}

try {
  await waitFor(`${runnerUrl}/healthz`, "the runner", 60_000, { authorization: `Bearer ${runnerToken}` });
  await waitFor(`${webUrl}/api/health`, "the web app", 600_000);
  await seedAndDeploy();
  console.log("");
  console.log(`Keyflow is running: open http://localhost:${webPort}`);
  console.log(`  runner API and Prometheus metrics: ${runnerUrl} (/metrics)`);
  console.log(`  database: ${process.env.DATABASE_URL ? "DATABASE_URL" : "embedded PGlite in .keyflow/pglite"}; Kafka: ${process.env.KAFKA_BROKERS ?? "not configured (demo source and file sinks)"}`);
  console.log(`  sign in as ${process.env.KEYFLOW_ADMIN_EMAIL ?? "admin@keyflow.local"} (the password was printed on the first start, or KEYFLOW_ADMIN_PASSWORD)`);
  console.log("  a runner or web process that exits is restarted; Ctrl-C stops everything.");
} catch (error) {
  console.error(`[start] ${error instanceof Error ? error.message : String(error)}`);
  shutdown(1);
}
