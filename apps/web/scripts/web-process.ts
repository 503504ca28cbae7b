// Building and running the web app as a process: used by `npm run serve -w @keyflow/web` (the web
// half of `npm start`) and by the e2e tests. `next build` is slow, so a build is reused while the
// sources it was made from are unchanged: a stamp beside it records a hash of every input file.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const WEB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO_DIR = path.resolve(WEB_DIR, "..", "..");
const STAMP_FILE = path.join(WEB_DIR, ".next", "keyflow-build-stamp.json");
const NEXT_BIN = createRequire(import.meta.url).resolve("next/dist/bin/next");
/** The server process: Next behind the front that caps bodies and stamps the client address. */
const SERVER_SCRIPT = path.join(WEB_DIR, "scripts", "http-server.ts");

/**
 * Where the web app listens: HOST, else KEYFLOW_WEB_HOST (its former name, still read), else
 * 127.0.0.1, so a default start is reachable from this machine only.
 */
export function listenHost(env: Record<string, string | undefined> = process.env): string {
  return env.HOST?.trim() || env.KEYFLOW_WEB_HOST?.trim() || "127.0.0.1";
}

/** What a production build depends on (beside node_modules, covered by the lockfile). */
const BUILD_INPUTS = [
  "apps/web/src",
  "apps/web/public",
  "apps/web/next.config.ts",
  "apps/web/scripts/http-server.ts",
  "apps/web/tsconfig.json",
  "apps/web/package.json",
  "packages/operators/src",
  "packages/operators/package.json",
  "packages/db/src",
  "packages/db/package.json",
  "tsconfig.base.json",
  "package-lock.json",
];

function* files(entry: string): Generator<string> {
  if (!fs.existsSync(entry)) return;
  if (!fs.statSync(entry).isDirectory()) {
    yield entry;
    return;
  }
  for (const child of fs.readdirSync(entry, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (child.name === "node_modules" || child.name.startsWith(".")) continue;
    yield* files(path.join(entry, child.name));
  }
}

/** sha256 over the paths and contents of every build input. */
export function sourceHash(): string {
  const hash = createHash("sha256");
  for (const input of BUILD_INPUTS) {
    for (const file of files(path.join(REPO_DIR, input))) {
      hash.update(path.relative(REPO_DIR, file)).update("\0").update(fs.readFileSync(file)).update("\0");
    }
  }
  return hash.digest("hex");
}

function nextEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...extra };
}

function run(args: string[], log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [NEXT_BIN, ...args], { cwd: WEB_DIR, env: nextEnv({ NODE_ENV: "production" }), stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      for (const line of text.split("\n")) if (line.trim()) log(line);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", reject);
    child.on("exit", (code, signal) => (code === 0 ? resolve() : reject(new Error(`next ${args.join(" ")} failed (${signal ?? `exit ${code}`}):\n${tail}`))));
  });
}

export interface BuildResult {
  built: boolean;
  ms: number;
}

/** Runs `next build` unless the existing build was made from the same sources. */
export async function ensureBuilt(opts: { log?: (line: string) => void; force?: boolean } = {}): Promise<BuildResult> {
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  const hash = sourceHash();
  if (!opts.force && fs.existsSync(path.join(WEB_DIR, ".next", "BUILD_ID")) && fs.existsSync(STAMP_FILE)) {
    const stamp: unknown = JSON.parse(fs.readFileSync(STAMP_FILE, "utf8"));
    if (typeof stamp === "object" && stamp !== null && "hash" in stamp && stamp.hash === hash) {
      log("web: the existing build is up to date");
      return { built: false, ms: Date.now() - started };
    }
  }
  log("web: building (next build)…");
  await run(["build"], log);
  fs.writeFileSync(STAMP_FILE, `${JSON.stringify({ hash, builtAt: new Date().toISOString() }, null, 2)}\n`);
  return { built: true, ms: Date.now() - started };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface WebServer {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The web app's server (scripts/http-server.ts, Next behind its front) on a port, resolved once the API answers. Environment variables (DATABASE_URL,
 * KEYFLOW_PGLITE_DIR, RUNNER_URL) pass through `env`.
 */
export async function startWebServer(
  opts: {
    port?: number;
    host?: string;
    env?: Record<string, string | undefined>;
    log?: (line: string) => void;
    readyTimeoutMs?: number;
    /** Run next in its own process group (tests), so stop() ends everything it started. */
    ownProcessGroup?: boolean;
  } = {},
): Promise<WebServer> {
  const port = opts.port ?? (await freePort());
  const host = opts.host ?? "127.0.0.1";
  const log = opts.log ?? (() => undefined);
  const child = spawn(process.execPath, ["--import", "tsx", SERVER_SCRIPT], {
    cwd: WEB_DIR,
    env: nextEnv({ NODE_ENV: "production", ...opts.env, PORT: String(port), HOST: host }),
    stdio: ["ignore", "pipe", "pipe"],
    detached: opts.ownProcessGroup ?? false,
  });
  const signal = (sig: NodeJS.Signals) => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    process.kill(opts.ownProcessGroup ? -child.pid : child.pid, sig);
  };
  child.stdout?.on("data", (chunk: Buffer) => chunk.toString().split("\n").filter((l) => l.trim()).forEach(log));
  child.stderr?.on("data", (chunk: Buffer) => chunk.toString().split("\n").filter((l) => l.trim()).forEach(log));
  const exited = new Promise<never>((_, reject) => child.once("exit", (code, signal) => reject(new Error(`the web server exited early (${signal ?? `exit ${code}`})`))));
  exited.catch(() => undefined);

  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    signal("SIGTERM");
    const timer = setTimeout(() => signal("SIGKILL"), 5_000);
    await gone;
    clearTimeout(timer);
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  try {
    while (true) {
      const ready = await Promise.race([
        fetch(`${url}/api/health`).then(
          (r) => r.ok,
          () => false,
        ),
        exited,
      ]);
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`the web server did not answer on ${url} within ${opts.readyTimeoutMs ?? 60_000} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, port, process: child, stop };
}
