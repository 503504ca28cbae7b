// Crash recovery (issue 35), in Chromium against the real runner, PostgreSQL and Kafka: a rule
// enforces on Kafka with an exactly-once sink; the runner, run by `npm start`'s supervisor
// (scripts/supervise.ts), is killed with SIGKILL while it reads a batch. The Operations tab says
// "runner unreachable since HH:MM:SS" and greys the live figures out; the supervisor restarts the
// runner, the web app's reconciler submits the rule job again under its id, and the tab says
// "running" again. A read_committed consumer of the enforcement topic holds every expected alert
// exactly once, bursts split across the crash included (their first payments came back with the
// checkpoint's state). Then `keyflow resume` brings the stopped deployment back: refused for an
// analyst (it enforces), done for the approver. Screenshots: e2e/artifacts/recovery-*.png.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Consumer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { freePort } from "@keyflow/web/process";
import { supervise, type Supervisor } from "../scripts/supervise";
import { apiClient, artifactLog, artifactPath, E2E_PASSWORD, e2eEmail, launchBrowser, ruleTopics, startWebApp, type TestBrowser, type WebApp } from "./support";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BROKERS = (process.env.KAFKA_BROKERS ?? "").split(",").filter(Boolean);
const TOKEN = randomBytes(16).toString("hex");
// Recent event times: the sinks stamp messages with them, and the broker's retention deletes older ones.
const t0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;

type Payment = { txId: string; cardId: string; amount: number; ts: number };
const pay = (txId: string, cardId: string, ts: number, amount = 900): Payment => ({ txId, cardId, amount, ts });
/** Ordinary payments, one per card: never an alert. */
const ordinary = (tag: string, from: number, n: number) => Array.from({ length: n }, (_, i) => pay(`${tag}${i}`, `${tag}${i}`, from + i * 100, 10));

describe("crash recovery: SIGKILL of the runner while a rule enforces", () => {
  let app: WebApp;
  let runners: Supervisor;
  let browser: TestBrowser;
  let consumer: Consumer | undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-e2e-recovery-"));
  let runnerUrl = "";

  beforeAll(async () => {
    if (BROKERS.length === 0) throw new Error("recovery.e2e.test.ts needs KAFKA_BROKERS (the real broker: npm run services)");
    const port = await freePort();
    runnerUrl = `http://127.0.0.1:${port}`;
    const { log } = artifactLog("recovery-runner.log");
    // A restart delay long enough for the UI (polling every 2 s) to see the runner gone.
    runners = supervise(
      [{ name: "runner", args: [path.join(REPO, "apps/runner/bin/keyflow.mjs"), "serve"], cwd: REPO, env: { ...process.env, RUNNER_PORT: String(port), RUNNER_HOST: "127.0.0.1", KEYFLOW_CHECKPOINT_ROOT: path.join(dir, "ckpt"), KEYFLOW_DATA_DIR: path.join(dir, "data"), DATABASE_URL: "", KAFKA_BROKERS: BROKERS.join(","), KEYFLOW_RUNNER_TOKEN: TOKEN } }],
      { policy: { initialDelayMs: 8_000 }, log },
    );
    app = await startWebApp({ name: "recovery", env: { RUNNER_URL: runnerUrl, KAFKA_BROKERS: BROKERS.join(","), KEYFLOW_RUNNER_TOKEN: TOKEN, KEYFLOW_RECONCILE_INTERVAL_MS: "1000" } });
    browser = await launchBrowser({ signIn: "pat", role: "approver", viewport: { width: 1600, height: 1100 } });
  });

  afterAll(async () => {
    await consumer?.disconnect();
    if (browser) fs.writeFileSync(artifactPath("recovery-browser.log"), [...browser.pageErrors.map((m) => `page error: ${m}`), ...browser.consoleErrors.map((m) => `error: ${m}`)].join("\n"));
    await browser?.close();
    await app?.stop();
    await runners?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("alerts exactly once across the crash; the UI says unreachable, then running; keyflow resume checks the role", async () => {
    const run = randomBytes(4).toString("hex");
    const name = `recovery-${run}`;
    const topics = await ruleTopics(BROKERS, run);
    const { payments, enforcement, produce } = topics;
    consumer = topics.consumer;
    // The enforced alerts' triggering payments.
    const enforcedTxIds = () => topics.enforced.map((v) => String((JSON.parse(v) as { event: { txId: string } }).event.txId));

    const graph: PipelineDocumentInput = {
      format: PIPELINE_FORMAT,
      name,
      settings: { checkpointIntervalMs: 500, parallelism: 1 },
      nodes: [
        { id: "payments", type: "source.kafka", params: { topic: payments, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1000 }, position: { x: 0, y: 80 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" }, position: { x: 300, y: 80 } },
        { id: "velocity", type: "velocity", params: { threshold: 3, windowMs: "30m", idField: "txId" }, position: { x: 600, y: 80 } },
        { id: "alerts", type: "sink.kafka", params: { topic: enforcement, deliveryGuarantee: "exactly-once" }, position: { x: 900, y: 80 } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "velocity" },
        { from: "velocity", to: "alerts" },
      ],
    };
    const ana = apiClient(app.url, "ana");
    const pat = apiClient(app.url, "pat", "approver");
    const pipelineId = (await ana.pipeline.create.mutate({ name, graph })).id;
    const v1 = (await ana.pipeline.saveVersion.mutate({ pipelineId, graph, message: "velocity 3 in 30 min" })).version.id;
    const asked = await ana.promotion.request.mutate({ versionId: v1, reason: "crash recovery e2e" });
    await pat.promotion.approve.mutate({ requestId: asked.id, comment: "ok" });
    const deployment = await pat.deployment.deploy.mutate({ versionId: v1, mode: "enforcing", reason: "v1 enforces" });
    expect(deployment).toMatchObject({ status: "running", mode: "enforcing" });

    // Before the crash: 10 whole bursts (b0…b9 alert on their 3rd payment) and the first 2 payments of 10 more (s0…s9).
    const bursts = Array.from({ length: 10 }, (_, k) => [0, 1, 2].map((j) => pay(`b${k}-${j}`, `b${k}`, t0 + k * 1_000 + j * 100))).flat();
    const split = Array.from({ length: 10 }, (_, k) => [0, 1].map((j) => pay(`s${k}-${j}`, `s${k}`, t0 + 20_000 + k * 1_000 + j * 100))).flat();
    await produce([...bursts, ...split, ...ordinary("a", t0 + 40_000, 200)].sort((a, b) => a.ts - b.ts));
    await expect.poll(() => topics.enforced.length, { timeout: 60_000 }).toBe(10);

    const { page } = browser;
    await page.goto(`${app.url}/?pipeline=${pipelineId}`, { waitUntil: "domcontentloaded" });
    await page.getByTestId("live-payments").waitFor({ state: "visible", timeout: 30_000 });
    await page.getByTestId("tab-operations").click();
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");

    // SIGKILL while the runner reads a batch.
    await produce(ordinary("m", t0 + 70_000, 3_000));
    const killed = runners.children()[0]?.process;
    expect(killed?.pid).toBeDefined();
    killed?.kill("SIGKILL");
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 20_000 }).toMatch(/^runner unreachable since \d\d:\d\d:\d\d$/);
    expect(await page.getByTestId("live-payments").getAttribute("data-stale")).toBe("true");
    await page.screenshot({ path: artifactPath("recovery-unreachable.png") });

    // The supervisor restarts the runner; the reconciler brings the job back; the tab says so.
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 90_000 }).toBe("running");
    await expect.poll(() => page.getByTestId("live-payments").getAttribute("data-stale"), { timeout: 20_000 }).toBe("false");
    expect(runners.children()[0]?.attempt).toBe(2);
    await page.screenshot({ path: artifactPath("recovery-running-again.png") });

    // After the restart: each s burst's 3rd payment alerts only if its first two came back with the state.
    const third = Array.from({ length: 10 }, (_, k) => pay(`s${k}-2`, `s${k}`, t0 + 400_000 + k * 1_000));
    await produce([...third, ...ordinary("z", t0 + 420_000, 50)]);
    const expected = [...Array.from({ length: 10 }, (_, k) => `b${k}-2`), ...Array.from({ length: 10 }, (_, k) => `s${k}-2`)].sort();
    await expect.poll(() => topics.enforced.length, { timeout: 90_000 }).toBeGreaterThanOrEqual(20);
    await new Promise((r) => setTimeout(r, 3_000)); // a duplicate would arrive by now
    expect(enforcedTxIds().sort()).toEqual(expected);
    const audit = await pat.audit.list.query({ action: "reconcile", limit: 10 });
    expect(audit.events.map((e) => [e.actor, e.subjectId])).toEqual([["reconciler@keyflow.local", deployment.id]]);

    // Stopped, then resumed from the command line: an analyst may not resume an enforcing deployment.
    await pat.deployment.stop.mutate({ deploymentId: deployment.id, enforcementStops: true, reason: "e2e: stop to resume; enforcement stops meanwhile" });
    const keyflow = (person: string) =>
      spawnSync(process.execPath, [path.join(REPO, "apps/runner/bin/keyflow.mjs"), "resume", deployment.id, "--web", app.url, "--reason", "e2e resume"], {
        cwd: REPO,
        env: { ...process.env, KEYFLOW_EMAIL: e2eEmail(person), KEYFLOW_PASSWORD: E2E_PASSWORD },
        encoding: "utf8",
      });
    const refused = keyflow("ana");
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/refused \(FORBIDDEN\): resuming deployment \S+ \(enforcing\) needs the approver role/);
    const resumed = keyflow("pat");
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`deployment ${deployment.id} running again \\(job rule-\\S+\\), from its newest checkpoint`));
    await expect.poll(() => page.getByTestId("job-status").textContent(), { timeout: 30_000 }).toBe("running");
    const resumes = await pat.audit.list.query({ action: "resume", limit: 10 });
    expect(resumes.events.map((e) => [e.actor, (e.details as { status: string }).status])).toEqual([[e2eEmail("pat"), "succeeded"]]);
  });
});
