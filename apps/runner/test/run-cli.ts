// Runs the real `keyflow` command (node apps/runner/bin/keyflow.mjs) as a child process, the way
// users and `npx keyflow` do, and collects its exit code and output.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const RUNNER_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const KEYFLOW_BIN = path.join(RUNNER_DIR, "bin", "keyflow.mjs");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function startCli(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [KEYFLOW_BIN, ...args], {
    cwd: opts.cwd ?? RUNNER_DIR,
    // Heap snapshots verify the columns they keep between checkpoints (the golden resumes take many).
    env: { ...process.env, KEYFLOW_LOG_LEVEL: "warn", KEYFLOW_VERIFY_SNAPSHOTS: "1", ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

export function runCli(args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return startCli(args, opts).done;
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError instanceof Error ? lastError.message : String(lastError)}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
