// A naive reference model of the window operators for the property tests: it keeps the raw
// records and recomputes every window from them, with the same watermark protocol and the same
// FIRE / late-FIRE / PURGE rules, so the incremental, sliced implementation can be checked
// against the definition. Test-only; deliberately simple and slow.
import type { JsonObject, JsonValue } from "../../core/api";

export type RefAggregate = { op: "count" | "sum" | "min" | "max" | "avg" | "distinctCount"; field?: string };
export type RefWindows = { kind: "sliding"; size: number; slide: number } | { kind: "session"; gap: number };
export interface RefEvent {
  key: string;
  ts: number;
  value: JsonObject;
}
export interface RefOut {
  port: "out" | "late";
  value: JsonObject;
  timestamp: number;
}

const floorMod = (a: number, b: number): number => ((a % b) + b) % b;

function aggregate(agg: RefAggregate, values: JsonObject[]): JsonValue {
  const f = agg.field;
  const nums = f === undefined ? [] : values.map((v) => v[f]).filter((x): x is number => typeof x === "number");
  switch (agg.op) {
    case "count":
      return f === undefined ? values.length : values.filter((v) => v[f] !== undefined && v[f] !== null).length;
    case "sum":
      return nums.reduce((a, b) => a + b, 0);
    case "min":
      return Math.min(...nums);
    case "max":
      return Math.max(...nums);
    case "avg":
      return nums.reduce((a, b) => a + b, 0) / nums.length;
    case "distinctCount":
      return new Set(values.map((v) => (f === undefined ? undefined : v[f])).filter((x) => x !== undefined && x !== null).map((x) => JSON.stringify(x))).size;
  }
}

/** Windows [start, end) of a sliding assigner that contain t. */
function slidingWindows(size: number, slide: number, t: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const last = t - floorMod(t, slide);
  for (let start = last; start > t - size; start -= slide) out.push([start, start + size]);
  return out.reverse();
}

/** Sessions of a key's records: [start, end) with touching windows merged. */
function sessions(gap: number, records: RefEvent[]): Array<{ start: number; end: number; records: RefEvent[] }> {
  const sorted = [...records].sort((a, b) => a.ts - b.ts);
  const out: Array<{ start: number; end: number; records: RefEvent[] }> = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.ts <= last.end) {
      last.end = Math.max(last.end, r.ts + gap);
      last.records.push(r);
    } else out.push({ start: r.ts, end: r.ts + gap, records: [r] });
  }
  return out;
}

/**
 * Runs the model over events in arrival order. After each record the watermark becomes
 * max(ts) − maxOutOfOrderness − 1; at the end it becomes +infinity.
 */
export function referenceRun(windows: RefWindows, agg: RefAggregate, lateness: number, maxOutOfOrderness: number, events: RefEvent[]): RefOut[] {
  const out: RefOut[] = [];
  let live: RefEvent[] = []; // accepted records whose windows are not all purged
  let wm = Number.NEGATIVE_INFINITY;
  let maxTs = Number.NEGATIVE_INFINITY;
  const emit = (key: string, start: number, end: number, recs: RefEvent[]): void => {
    out.push({ port: "out", value: { key, windowStart: start, windowEnd: end, value: aggregate(agg, recs.map((r) => r.value)) }, timestamp: end - 1 });
  };
  const windowsOf = (key: string): Array<{ start: number; end: number; records: RefEvent[] }> => {
    const mine = live.filter((r) => r.key === key);
    if (windows.kind === "session") return sessions(windows.gap, mine);
    const byWindow = new Map<number, { start: number; end: number; records: RefEvent[] }>();
    for (const r of mine) {
      for (const [start, end] of slidingWindows(windows.size, windows.slide, r.ts)) {
        const w = byWindow.get(start) ?? { start, end, records: [] };
        w.records.push(r);
        byWindow.set(start, w);
      }
    }
    return [...byWindow.values()].sort((a, b) => a.start - b.start);
  };
  const keys = (): string[] => [...new Set(live.map((r) => r.key))].sort();

  const advance = (to: number): void => {
    if (to <= wm) return;
    const from = wm;
    // Every window whose max timestamp the watermark passes fires, in (time, key) order.
    const due: Array<{ t: number; key: string; start: number; end: number; records: RefEvent[] }> = [];
    for (const key of keys()) for (const w of windowsOf(key)) if (w.end - 1 > from && w.end - 1 <= to) due.push({ t: w.end - 1, key, ...w });
    due.sort((a, b) => a.t - b.t || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    wm = to;
    for (const d of due) emit(d.key, d.start, d.end, d.records);
    // PURGE: drop the records whose windows are all past their allowed lateness.
    if (windows.kind === "session") {
      const keep: RefEvent[] = [];
      for (const key of keys()) for (const s of windowsOf(key)) if (s.end - 1 + lateness > wm) keep.push(...s.records);
      live = live.filter((r) => keep.includes(r));
    } else {
      live = live.filter((r) => {
        const lastEnd = r.ts - floorMod(r.ts, windows.slide) + windows.size;
        return lastEnd - 1 + lateness > wm;
      });
    }
  };

  for (const e of events) {
    let accepted: boolean;
    let lateFire: Array<{ start: number; end: number; records: RefEvent[] }> = [];
    if (windows.kind === "session") {
      const merged = sessions(windows.gap, [...live.filter((r) => r.key === e.key), e]).find((s) => s.records.includes(e));
      accepted = merged !== undefined && merged.end - 1 + lateness > wm;
      if (accepted) {
        live.push(e);
        const s = windowsOf(e.key).find((w) => w.records.includes(e));
        if (s && s.end - 1 <= wm) lateFire = [s];
      }
    } else {
      const mine = slidingWindows(windows.size, windows.slide, e.ts);
      accepted = mine.some(([, end]) => end - 1 + lateness > wm);
      if (mine.length === 0) accepted = true; // between windows: ignored, not late
      if (accepted && mine.length > 0) {
        live.push(e);
        lateFire = windowsOf(e.key).filter((w) => w.end - 1 <= wm && w.end - 1 + lateness > wm && w.records.includes(e));
      }
    }
    if (!accepted) out.push({ port: "late", value: e.value, timestamp: e.ts });
    for (const w of lateFire) emit(e.key, w.start, w.end, w.records);
    if (e.ts > maxTs) {
      maxTs = e.ts;
      advance(maxTs - maxOutOfOrderness - 1);
    }
  }
  advance(Number.POSITIVE_INFINITY);
  return out;
}
