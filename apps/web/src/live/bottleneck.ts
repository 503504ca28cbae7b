// Where a running pipeline is stuck, the way Flink's web UI measures it but without blaming the
// victims: backpressure levels from backPressuredTimeMsPerSecond (≤ 10 % OK, ≤ 50 % LOW, above HIGH),
// and the bottleneck found on the graph. A saturated node (busy above 50 %, not backpressured itself,
// so nothing below it holds it up) with a backpressured node above it is the cause; the
// backpressured nodes above a cause are only waiting for it. Framework-free.

export type PressureLevel = "ok" | "low" | "high";

/**
 * - cause: saturated, with backpressure above it and none below it: the node to look at;
 * - waiting: backpressured because a cause further down is saturated;
 * - backpressured: backpressured, but no cause found below (its figures are missing);
 * - busy: saturated, but nothing above it is held up (yet);
 * - ok: neither.
 */
export type BottleneckRole = "cause" | "waiting" | "backpressured" | "busy" | "ok";

export interface NodeTimes {
  busyTimeMsPerSecond?: number | undefined;
  backPressuredTimeMsPerSecond?: number | undefined;
}

export interface NodeVerdict {
  role: BottleneckRole;
  /** Undefined when the runner reports no backpressure for the node. */
  backpressure?: PressureLevel;
  /** 0..1, when reported. */
  busyRatio?: number;
  backPressuredRatio?: number;
  /** For a waiting node: the causes below it. */
  causes?: string[];
}

/** Flink's thresholds on backPressuredTimeMsPerSecond (ratio of the second). */
export const OK_MAX = 0.1;
export const LOW_MAX = 0.5;
/** Busy above this is saturated (Flink colours a task busy from 50 % on). */
export const SATURATED_BUSY = 0.5;

export function pressureLevel(ratio: number): PressureLevel {
  if (ratio <= OK_MAX) return "ok";
  if (ratio <= LOW_MAX) return "low";
  return "high";
}

/** A node id from an edge end (`vel:late` → `vel`). */
function nodeOf(end: string): string {
  const colon = end.indexOf(":");
  return colon < 0 ? end : end.slice(0, colon);
}

function reach(start: string, next: ReadonlyMap<string, readonly string[]>): Set<string> {
  const seen = new Set<string>();
  const todo = [...(next.get(start) ?? [])];
  while (todo.length > 0) {
    const id = todo.pop() as string;
    if (seen.has(id)) continue;
    seen.add(id);
    todo.push(...(next.get(id) ?? []));
  }
  seen.delete(start);
  return seen;
}

/**
 * The verdict for each node that has busy or backpressure figures (nodes without figures are left
 * out: nothing is guessed). `edges` take document ends (`from`/`to`, ports allowed).
 */
export function classifyBottleneck(
  nodes: readonly { id: string }[],
  edges: readonly { from: string; to: string }[],
  metrics: Readonly<Record<string, NodeTimes | undefined>>,
): Record<string, NodeVerdict> {
  const down = new Map<string, string[]>();
  const up = new Map<string, string[]>();
  for (const e of edges) {
    const from = nodeOf(e.from);
    const to = nodeOf(e.to);
    if (from === to) continue;
    down.set(from, [...(down.get(from) ?? []), to]);
    up.set(to, [...(up.get(to) ?? []), from]);
  }
  const ratio = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? undefined : Math.min(1, Math.max(0, ms / 1000)));
  const figures = new Map<string, { busy: number | undefined; bp: number | undefined }>();
  for (const n of nodes) {
    const m = metrics[n.id];
    const busy = ratio(m?.busyTimeMsPerSecond);
    const bp = ratio(m?.backPressuredTimeMsPerSecond);
    if (busy !== undefined || bp !== undefined) figures.set(n.id, { busy, bp });
  }
  const backpressured = (id: string) => {
    const bp = figures.get(id)?.bp;
    return bp !== undefined && pressureLevel(bp) !== "ok";
  };

  const causes = new Set<string>();
  const busyOnly = new Set<string>();
  for (const [id, f] of figures) {
    if (f.busy === undefined || f.busy <= SATURATED_BUSY || backpressured(id)) continue;
    const above = [...reach(id, up)].some(backpressured);
    (above ? causes : busyOnly).add(id);
  }

  const out: Record<string, NodeVerdict> = {};
  for (const [id, f] of figures) {
    const verdict: NodeVerdict = { role: "ok" };
    if (f.bp !== undefined) {
      verdict.backpressure = pressureLevel(f.bp);
      verdict.backPressuredRatio = f.bp;
    }
    if (f.busy !== undefined) verdict.busyRatio = f.busy;
    if (causes.has(id)) verdict.role = "cause";
    else if (busyOnly.has(id)) verdict.role = "busy";
    else if (backpressured(id)) {
      const below = [...reach(id, down)].filter((d) => causes.has(d));
      if (below.length > 0) {
        verdict.role = "waiting";
        verdict.causes = below.sort();
      } else verdict.role = "backpressured";
    }
    out[id] = verdict;
  }
  return out;
}
