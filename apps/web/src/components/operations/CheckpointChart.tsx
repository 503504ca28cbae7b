"use client";
// Checkpoint duration and size over time (uPlot): duration on the left axis, state size on the
// right, one point per completed checkpoint, oldest on the left.
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatBytes, formatDuration } from "../../live/format";

export interface ChartPoint {
  /** Epoch ms. */
  at: number;
  durationMs: number;
  stateBytes: number;
}

export function CheckpointChart({ points, timeoutMs }: { points: readonly ChartPoint[]; timeoutMs: number }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The 80 % line is drawn only once durations come near it (else it flattens every other point).
  const maxDuration = Math.max(0, ...points.map((p) => p.durationMs));
  const showLimit = maxDuration > timeoutMs * 0.4;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = Math.max(240, el.clientWidth || 320);
    const series: uPlot.Series[] = [
      {},
      { label: "duration", stroke: "#7c9cff", width: 1.5, scale: "ms", value: (_u, v) => (v == null ? "–" : formatDuration(v)), points: { show: true, size: 4 } },
      { label: "size", stroke: "#4ade80", width: 1.5, scale: "bytes", value: (_u, v) => (v == null ? "–" : formatBytes(v)), points: { show: true, size: 4 } },
    ];
    if (showLimit) series.push({ label: "80 % of timeout", stroke: "#f87171", dash: [4, 4], width: 1, scale: "ms", points: { show: false } });
    const opts: uPlot.Options = {
      width,
      height: 170,
      series,
      scales: { x: { time: true }, ms: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.15] }, bytes: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.15] } },
      axes: [
        { stroke: "#8b93a7", grid: { stroke: "rgba(255,255,255,0.06)" } },
        { scale: "ms", stroke: "#7c9cff", size: 66, values: (_u, ticks) => ticks.map((t) => formatDuration(t)), grid: { stroke: "rgba(255,255,255,0.06)" } },
        { scale: "bytes", side: 1, stroke: "#4ade80", size: 70, values: (_u, ticks) => ticks.map((t) => formatBytes(t)), grid: { show: false } },
      ],
      legend: { show: true },
    };
    const u = new uPlot(opts, [[], [], []], el);
    plot.current = u;
    return () => {
      u.destroy();
      plot.current = null;
    };
  }, [showLimit]);

  useEffect(() => {
    const data: uPlot.AlignedData = [points.map((p) => p.at / 1000), points.map((p) => p.durationMs), points.map((p) => p.stateBytes)];
    if (showLimit) (data as number[][]).push(points.map(() => timeoutMs * 0.8));
    plot.current?.setData(data);
  }, [points, timeoutMs, showLimit]);

  return <div className="kf-ops__chart" ref={host} data-testid="checkpoint-chart" />;
}
