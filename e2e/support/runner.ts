// The runner service (`keyflow serve`) for e2e tests that deploy or dry-run: its own free port and
// throwaway checkpoint and data folders, its log kept as an artifact.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { artifactLog } from "./artifacts";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * The runner always wants a bearer token: every runner of an e2e run takes this one, and every web
 * app startWebApp starts is handed it (KEYFLOW_RUNNER_TOKEN), as `npm start` does.
 */
export const E2E_RUNNER_TOKEN = randomBytes(24).toString("base64url");

export interface TestRunner {
  url: string;
  token: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Starts `keyflow serve`; `name` names its log (`e2e/artifacts/<name>-runner.log`); `env` overrides its environment. */
export async function startRunner(name: string, env: Record<string, string> = {}): Promise<TestRunner> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keyflow-e2e-${name}-runner-`));
  const { log } = artifactLog(`${name}-runner.log`);
  const child: ChildProcess = spawn(process.execPath, [path.join(REPO, "apps/runner/bin/keyflow.mjs"), "serve"], {
    cwd: REPO,
    env: { ...process.env, RUNNER_PORT: String(port), RUNNER_HOST: "127.0.0.1", KEYFLOW_CHECKPOINT_ROOT: path.join(dir, "ckpt"), KEYFLOW_DATA_DIR: path.join(dir, "data"), KEYFLOW_STATE_DIR: path.join(dir, "state"), KEYFLOW_RUNNER_TOKEN: E2E_RUNNER_TOKEN, DATABASE_URL: "", KAFKA_BROKERS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.on("data", (b: Buffer) => log(b.toString().trimEnd()));
  child.stderr?.on("data", (b: Buffer) => log(b.toString().trimEnd()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the runner exited with ${child.exitCode} (log: e2e/artifacts/${name}-runner.log)`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("the runner did not answer /healthz within 60 s");
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    token: E2E_RUNNER_TOKEN,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
