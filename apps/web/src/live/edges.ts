// Throughput on the canvas's edges from the nodes' live figures. The runner counts records per
// node, not per edge, so an edge carries: its target's input rate when it is the target's only
// input (exact), else its source's output rate on that port (the `late` port: the late rate;
// another side port: unknown, so nothing is drawn). Framework-free.
import type { LiveNodeMetrics } from "./metrics";

export interface EdgeFlow {
  recordsPerSecond: number;
  /** Stroke width: 1.5 at rest, growing with the logarithm of the rate, at most 8. */
  strokeWidth: number;
  /** The records queued on the edge's sending task, when the runner reports them. */
  queuedRecords?: number;
  /** The watermark its source emits (epoch ms), when it has one. */
  watermark?: number;
}

function split(end: string): { node: string; port: string | undefined } {
  const colon = end.indexOf(":");
  return colon < 0 ? { node: end, port: undefined } : { node: end.slice(0, colon), port: end.slice(colon + 1) };
}

export function strokeWidthFor(recordsPerSecond: number): number {
  if (recordsPerSecond <= 0) return 1.5;
  return Math.min(8, Math.round((1.5 + Math.log10(1 + recordsPerSecond) * 1.4) * 10) / 10);
}

/** Flow per edge id (`from->to`, the document's ends). */
export function edgeFlows(edges: readonly { from: string; to: string }[], nodes: Readonly<Record<string, LiveNodeMetrics>>): Map<string, EdgeFlow> {
  const inputs = new Map<string, number>();
  for (const e of edges) {
    const to = split(e.to).node;
    inputs.set(to, (inputs.get(to) ?? 0) + 1);
  }
  const out = new Map<string, EdgeFlow>();
  for (const e of edges) {
    const from = split(e.from);
    const to = split(e.to);
    const source = nodes[from.node];
    const target = nodes[to.node];
    let rate: number | undefined;
    if (from.port === "late") rate = source?.latePerSecond;
    else if (from.port !== undefined && from.port !== "out") rate = undefined;
    else if (target && inputs.get(to.node) === 1) rate = target.recordsInPerSecond;
    else rate = source?.recordsOutPerSecond;
    if (rate === undefined) continue;
    const flow: EdgeFlow = { recordsPerSecond: rate, strokeWidth: strokeWidthFor(rate) };
    if (source?.queuedRecords !== undefined) flow.queuedRecords = source.queuedRecords;
    if (source?.watermark !== null && source?.watermark !== undefined) flow.watermark = source.watermark;
    out.set(`${e.from}->${e.to}`, flow);
  }
  return out;
}
