// Test hook for the two-phase commit's crash tests (src/job/exactly-once.int.test.ts): with
// KEYFLOW_CRASH_AT=<phase>[@<n>] the runner kills itself with SIGKILL the n-th time (default 1st)
// a checkpoint reaches <phase> in this process. Phases, in the order of a checkpoint:
//   after-precommit         sinks flushed, transactions open, `chk-<id>/` not yet written
//   after-checkpoint-write  `chk-<id>/` durable, no sink committed yet
//   after-commit            every sink committed, `_committed` not yet written (the window of the old
//                           duplicate-output bug)
// Nothing else reads this variable; unset (always, outside tests) it costs one comparison.
export const CRASH_PHASES = ["after-precommit", "after-checkpoint-write", "after-commit"] as const;
export type CrashPhase = (typeof CRASH_PHASES)[number];

interface CrashSpec {
  phase: CrashPhase;
  nth: number;
}

function parseSpec(raw: string | undefined): CrashSpec | undefined {
  if (raw === undefined || raw === "") return undefined;
  const m = /^([a-z-]+)(?:@(\d+))?$/.exec(raw);
  const phase = CRASH_PHASES.find((p) => p === m?.[1]);
  if (!m || !phase) throw new Error(`KEYFLOW_CRASH_AT="${raw}": expected one of ${CRASH_PHASES.join(", ")}, optionally followed by @<n>`);
  return { phase, nth: m[2] === undefined ? 1 : Math.max(1, Number(m[2])) };
}

const spec = parseSpec(process.env.KEYFLOW_CRASH_AT);
let reached = 0;

/** Called by the driver at each phase of a checkpoint's two-phase commit. */
export function crashPoint(phase: CrashPhase): void {
  if (spec === undefined || spec.phase !== phase) return;
  if (++reached < spec.nth) return;
  process.stderr.write(`keyflow: KEYFLOW_CRASH_AT=${phase}@${spec.nth}: killing this process (test hook)\n`);
  process.kill(process.pid, "SIGKILL");
}
