// Whether the runner answers, as this server last saw it: the reconciler polls it every few
// seconds and the UI asks here, so a job whose runner is silent shows "runner unreachable since …"
// rather than the last status it heard. Kept on globalThis: Next bundles instrumentation and route
// handlers apart, and both must see one record.
import { withRunnerAuth } from "../runner-client";

export interface RunnerHealth {
  reachable: boolean;
  /** When the runner last changed between answering and not (ISO); null before the first look. */
  since: string | null;
  /** When this server last looked (ISO). */
  checkedAt: string | null;
  /** Why the last look failed. */
  error: string | null;
}

const holder = globalThis as typeof globalThis & { __keyflowRunnerHealth?: RunnerHealth };
const health = (): RunnerHealth => (holder.__keyflowRunnerHealth ??= { reachable: true, since: null, checkedAt: null, error: null });

/** A runner call answered (any HTTP answer: the runner is there). */
export function runnerAnswered(at = new Date()): void {
  const h = health();
  holder.__keyflowRunnerHealth = { reachable: true, since: h.reachable && h.since ? h.since : at.toISOString(), checkedAt: at.toISOString(), error: null };
}

/** A runner call got no answer (refused, timed out). */
export function runnerSilent(error: string, at = new Date()): void {
  const h = health();
  holder.__keyflowRunnerHealth = { reachable: false, since: !h.reachable && h.since ? h.since : at.toISOString(), checkedAt: at.toISOString(), error };
}

export function runnerHealth(): RunnerHealth {
  return { ...health() };
}

/** How old a look may be before a reader looks again itself (the reconciler may be between polls). */
const FRESH_MS = 1_500;

/** The runner's health, looking again (GET /healthz, 2 s) when the last look is older than FRESH_MS. */
export async function probeRunner(runnerUrl: string): Promise<RunnerHealth> {
  const h = health();
  if (h.checkedAt !== null && Date.now() - Date.parse(h.checkedAt) < FRESH_MS) return { ...h };
  try {
    const res = await fetch(`${runnerUrl}/healthz`, withRunnerAuth({ signal: AbortSignal.timeout(2_000) }));
    await res.body?.cancel();
    runnerAnswered();
  } catch (error) {
    runnerSilent(error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error));
  }
  return runnerHealth();
}
