// Test hook for the two-phase commit's crash tests (src/job/exactly-once.int.test.ts): with
// KEYFLOW_CRASH_AT=<phase>[@<n>] the runner kills itself with SIGKILL the n-th time (default 1st)
// a checkpoint reaches <phase> in this process. Phases, in the order of a checkpoint:
//   after-precommit         sinks flushed, transactions open, `chk-<id>/` not yet written
//   after-checkpoint-write  `chk-<id>/` durable, no sink committed yet
//   after-sinks-commit      the sinks committed, the dead letters' transaction not yet
//   after-commit            every sink committed, `_committed` not yet written (the window of the old
//                           duplicate-output bug)
// KEYFLOW_STOP_AT=<phase>[@<n>] freezes the process there with SIGSTOP instead (the zombie test:
// a runner stalled in the middle of a commit, then replaced and resumed with SIGCONT).
// Nothing else reads these variables; unset (always, outside tests) they cost one comparison.
// The crash test crashes at each of CRASH_PHASES (its input lasts for three crash runs per
// parallelism); after-sinks-commit serves the zombie test's partly lost checkpoint.
export const CRASH_PHASES = ["after-precommit", "after-checkpoint-write", "after-commit"] as const;
const HOOK_PHASES = [...CRASH_PHASES, "after-sinks-commit"] as const;
export type CrashPhase = (typeof HOOK_PHASES)[number];

interface CrashSpec {
  phase: CrashPhase;
  nth: number;
}

function parseSpec(raw: string | undefined, variable: string): CrashSpec | undefined {
  if (raw === undefined || raw === "") return undefined;
  const m = /^([a-z-]+)(?:@(\d+))?$/.exec(raw);
  const phase = HOOK_PHASES.find((p) => p === m?.[1]);
  if (!m || !phase) throw new Error(`${variable}="${raw}": expected one of ${HOOK_PHASES.join(", ")}, optionally followed by @<n>`);
  return { phase, nth: m[2] === undefined ? 1 : Math.max(1, Number(m[2])) };
}

const crash = parseSpec(process.env.KEYFLOW_CRASH_AT, "KEYFLOW_CRASH_AT");
const stop = parseSpec(process.env.KEYFLOW_STOP_AT, "KEYFLOW_STOP_AT");
const reached = new Map<CrashPhase, number>();

/** Called by the driver at each phase of a checkpoint's two-phase commit. */
export function crashPoint(phase: CrashPhase): void {
  if (crash?.phase !== phase && stop?.phase !== phase) return;
  const n = (reached.get(phase) ?? 0) + 1;
  reached.set(phase, n);
  if (crash?.phase === phase && n === crash.nth) {
    process.stderr.write(`keyflow: KEYFLOW_CRASH_AT=${phase}@${crash.nth}: killing this process (test hook)\n`);
    process.kill(process.pid, "SIGKILL");
  }
  if (stop?.phase === phase && n === stop.nth) {
    process.stderr.write(`keyflow: KEYFLOW_STOP_AT=${phase}@${stop.nth}: stopping this process with SIGSTOP (test hook)\n`);
    process.kill(process.pid, "SIGSTOP"); // execution goes on here after SIGCONT
  }
}
