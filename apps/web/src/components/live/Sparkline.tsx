"use client";
// A node's last ~2 minutes of throughput: records in (solid) and out (faint), as SVG polylines.
import { sparklinePoints, type RatePoint } from "../../live/history";

export function Sparkline({ points, width = 200, height = 22 }: { points: readonly RatePoint[]; width?: number; height?: number }) {
  const ins = points.map((p) => p.recordsInPerSecond);
  const outs = points.map((p) => p.recordsOutPerSecond);
  // Both lines on the same scale: append the other series' max so the scales agree.
  const max = Math.max(1, ...ins, ...outs);
  const scaled = (values: number[]) => sparklinePoints([...values.map((v) => (v / max) * 1000)], width, height);
  return (
    <svg className="kf-live__spark" viewBox={`0 0 ${width} ${height}`} width="100%" height={height} preserveAspectRatio="none" aria-label="Throughput over the last two minutes" role="img">
      {points.length > 1 ? (
        <>
          <polyline className="kf-live__spark-out" points={scaled(outs)} fill="none" />
          <polyline className="kf-live__spark-in" points={scaled(ins)} fill="none" />
        </>
      ) : null}
    </svg>
  );
}
