// What the UI says about a deployed job given whether the runner answers: never a status it has
// not just heard. A silent runner makes every job "runner unreachable since HH:MM:SS" and its
// figures stale; once it answers, the runner's own status shows again.

/** The web server's view of the runner (server/services/runner-health.ts), as the browser gets it. */
export interface RunnerHealthView {
  reachable: boolean;
  /** ISO time of the last change between answering and not. */
  since: string | null;
}

/** Wall-clock time as the panels show it (24 h, local). */
export function clockTime(at: string | number | Date): string {
  return new Date(at).toLocaleTimeString("en-GB", { hour12: false });
}

/** "runner unreachable since HH:MM:SS" when the runner does not answer, else null. */
export function unreachableText(health: RunnerHealthView | undefined): string | null {
  if (!health || health.reachable) return null;
  return `runner unreachable since ${health.since ? clockTime(health.since) : "?"}`;
}

/**
 * A job's status line: the runner's word only when it answered this time. `status` is the last
 * status fetched (undefined: none yet); `fetchFailed` says the last fetch failed, so `status` is stale.
 */
export function shownJobStatus(health: RunnerHealthView | undefined, status: string | undefined, fetchFailed: boolean): { text: string; kind: string; stale: boolean } {
  const unreachable = unreachableText(health);
  if (unreachable) return { text: unreachable, kind: "unreachable", stale: true };
  if (fetchFailed) return { text: "unknown (the runner did not say)", kind: "unknown", stale: true };
  if (status === undefined) return { text: "…", kind: "unknown", stale: false };
  return { text: status, kind: status, stale: false };
}
