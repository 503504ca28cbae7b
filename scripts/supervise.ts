// The process supervisor of `npm start`: keeps each child running, restarting one that exits with an
// exponential backoff (and saying so), while the others keep serving; stop() ends them all. Each
// child leads a process group of its own, so what it started (the web app's `next start`) goes with
// it: a child killed with SIGKILL leaves no orphan holding its port for the restart.
import { spawn, type ChildProcess } from "node:child_process";

export interface ChildSpec {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface BackoffPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** A child that ran this long before exiting restarts from the initial delay again. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialDelayMs: 1_000, maxDelayMs: 30_000, resetAfterMs: 60_000 };

/** The delay before restart `attempt` (2, 3, …) of a child that keeps exiting: initial delay doubling, capped. */
export function backoffDelayMs(policy: BackoffPolicy, attempt: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 2));
}

export interface SupervisedChild {
  readonly name: string;
  /** The running process, or undefined while it waits to be restarted. */
  readonly process: ChildProcess | undefined;
  /** Runs so far (1 on the first start). */
  readonly attempt: number;
}

export interface Supervisor {
  children(): SupervisedChild[];
  /** SIGTERM to every child (SIGKILL after `graceMs`); no restarts from then on. */
  stop(graceMs?: number): Promise<void>;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Signals the child's whole process group (the child and what it started); a group already gone is fine. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // no such group: everything in it has exited
  }
}

export function supervise(specs: ChildSpec[], opts: { policy?: Partial<BackoffPolicy>; log?: (line: string) => void; now?: () => number } = {}): Supervisor {
  const policy = { ...DEFAULT_BACKOFF, ...opts.policy };
  const log = opts.log ?? ((line: string) => console.log(line));
  const now = opts.now ?? Date.now;
  let stopping = false;

  interface State {
    spec: ChildSpec;
    process: ChildProcess | undefined;
    attempt: number;
    failures: number;
    startedAt: number;
    timer: NodeJS.Timeout | undefined;
  }
  const states: State[] = specs.map((spec) => ({ spec, process: undefined, attempt: 0, failures: 0, startedAt: 0, timer: undefined }));

  function start(s: State): void {
    s.timer = undefined;
    s.attempt++;
    s.startedAt = now();
    const child = spawn(process.execPath, s.spec.args, { cwd: s.spec.cwd, env: s.spec.env ?? process.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    s.process = child;
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = "";
      stream.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        let nl;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          log(`[${s.spec.name}] ${buffered.slice(0, nl)}`);
          buffered = buffered.slice(nl + 1);
        }
      });
    }
    child.on("error", (error) => log(`[start] ${s.spec.name} could not be started: ${error.message}`));
    child.on("exit", (code, signal) => {
      s.process = undefined;
      signalGroup(child, "SIGKILL");
      if (stopping) return;
      if (now() - s.startedAt >= policy.resetAfterMs) s.failures = 0;
      s.failures++;
      const delay = backoffDelayMs(policy, s.failures + 1);
      log(`[start] ${s.spec.name} exited (${signal ?? `code ${code}`}); restarting in ${seconds(delay)} (attempt ${s.attempt + 1})`);
      s.timer = setTimeout(() => start(s), delay);
    });
  }

  for (const s of states) start(s);

  return {
    children: () => states.map((s) => ({ name: s.spec.name, process: s.process, attempt: s.attempt })),
    async stop(graceMs = 5_000) {
      stopping = true;
      await Promise.all(
        states.map(async (s) => {
          if (s.timer) clearTimeout(s.timer);
          const child = s.process;
          if (!child || child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise<void>((r) => child.once("exit", () => r()));
          signalGroup(child, "SIGTERM");
          const killer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
          await exited;
          clearTimeout(killer);
        }),
      );
    },
  };
}
