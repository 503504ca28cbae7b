// The sparkline's memory: the last ~2 minutes of each node's rates, one point per snapshot.
import type { LiveMetrics } from "./metrics";

export interface RatePoint {
  at: number;
  recordsInPerSecond: number;
  recordsOutPerSecond: number;
}

export const HISTORY_MS = 120_000;

export type RateHistory = ReadonlyMap<string, readonly RatePoint[]>;

/** A new history with the snapshot appended and points older than `windowMs` before it dropped. */
export function appendHistory(history: RateHistory, m: LiveMetrics, windowMs = HISTORY_MS): RateHistory {
  const next = new Map<string, readonly RatePoint[]>();
  for (const [id, n] of Object.entries(m.nodes)) {
    const kept = (history.get(id) ?? []).filter((p) => p.at > m.at - windowMs && p.at < m.at);
    next.set(id, [...kept, { at: m.at, recordsInPerSecond: n.recordsInPerSecond, recordsOutPerSecond: n.recordsOutPerSecond }]);
  }
  return next;
}

/** SVG polyline points for values in a width × height box (newest on the right, 0 at the bottom). */
export function sparklinePoints(values: readonly number[], width: number, height: number): string {
  if (values.length === 0) return "";
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const x = values.length > 1 ? i * step : width;
      const y = height - (Math.max(0, v) / max) * (height - 1) - 0.5;
      return `${Math.round(x * 10) / 10},${Math.round(y * 10) / 10}`;
    })
    .join(" ");
}
