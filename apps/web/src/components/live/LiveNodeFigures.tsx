"use client";
// What a node of a running pipeline shows: throughput in and out, a sparkline, watermark lag, keys,
// state, late records and dead letters, and (when the runner reports them) busy time and the
// backpressure level, with the bottleneck marked as the cause and the nodes above it as waiting;
// on a sink, its throttle.
import { formatBytes, formatCount, formatRate, formatWatermarkLag } from "../../live/format";
import type { NodeVerdict } from "../../live/bottleneck";
import { useOptionalPipelineTools } from "../versions/tools-context";
import { useLive } from "./LiveContext";
import "./live.css";
import { SinkThrottle } from "./SinkThrottle";
import { Sparkline } from "./Sparkline";

const EMPTY: readonly never[] = [];

const ROLE_TEXT: Record<NodeVerdict["role"], string> = {
  cause: "bottleneck",
  waiting: "waiting",
  backpressured: "backpressured",
  busy: "busy",
  ok: "",
};

function pct(ratio: number | undefined): string {
  return ratio === undefined ? "–" : `${Math.round(ratio * 100)} %`;
}

export function LiveNodeFigures({ nodeId }: { nodeId: string }) {
  const live = useLive();
  // Canvases that pin nothing (the diff view, inside WithoutNodeOverlays) show no live figures either.
  const tools = useOptionalPipelineTools();
  const m = live?.metrics?.nodes[nodeId];
  if (!live || !m || !tools) return null;
  const verdict = live.verdicts[nodeId];
  const history = live.history.get(nodeId) ?? EMPTY;
  const level = verdict?.backpressure;
  const role = verdict?.role;
  const stale = live.unreachable ?? null;
  const title = stale ? `${stale}: these are the last figures it sent` : verdict?.causes ? `Backpressured: waiting for ${verdict.causes.join(", ")} (the bottleneck), not slow itself` : role === "cause" ? "Saturated, with backpressure above it and none below: the bottleneck" : undefined;
  return (
    <div
      className={`kf-live nodrag nopan${level ? ` kf-live--${level}` : ""}${role && role !== "ok" ? ` kf-live--${role}` : ""}${stale ? " kf-live--stale" : ""}`}
      data-testid={`live-${nodeId}`}
      data-stale={stale ? "true" : "false"}
      data-records-in={m.recordsIn}
      data-records-out={m.recordsOut}
      data-backpressure={level ?? "none"}
      data-role={role ?? "none"}
      {...(title ? { title } : {})}
    >
      <div className="kf-live__rates">
        <span title={`${m.recordsIn.toLocaleString("en")} records in since the job started`}>
          in <strong>{formatRate(m.recordsInPerSecond)}</strong> <span className="kf-live__total">{m.recordsIn.toLocaleString("en")}</span>
        </span>
        <span title={`${m.recordsOut.toLocaleString("en")} records out since the job started`}>
          out <strong>{formatRate(m.recordsOutPerSecond)}</strong> <span className="kf-live__total">{m.recordsOut.toLocaleString("en")}</span>
        </span>
      </div>
      <Sparkline points={history} />
      <dl className="kf-live__grid">
        <div title="Watermark lag: the snapshot's time minus the node's event-time watermark">
          <dt>wm lag</dt>
          <dd>{formatWatermarkLag(m.watermark, live.metrics?.at ?? Date.now())}</dd>
        </div>
        <div title={`${m.keys.toLocaleString("en")} keys with state, ${m.timers.toLocaleString("en")} timers`}>
          <dt>keys</dt>
          <dd>{formatCount(m.keys)}</dd>
        </div>
        <div title={`${m.stateBytes.toLocaleString("en")} bytes of keyed state (approximate)`}>
          <dt>state</dt>
          <dd>{formatBytes(m.stateBytes)}</dd>
        </div>
        <div title={`${m.late.toLocaleString("en")} records arrived at or behind the watermark`}>
          <dt>late</dt>
          <dd className={m.late > 0 ? "kf-live__warn" : undefined}>{formatCount(m.late)}</dd>
        </div>
        <div title={`${m.deadLetters.toLocaleString("en")} records sent to the dead-letter output`}>
          <dt>dlq</dt>
          <dd className={m.deadLetters > 0 ? "kf-live__bad" : undefined}>{formatCount(m.deadLetters)}</dd>
        </div>
      </dl>
      {verdict && (verdict.busyRatio !== undefined || level !== undefined) ? (
        <div className="kf-live__pressure" data-testid={`live-pressure-${nodeId}`}>
          <span>busy {pct(verdict.busyRatio)}</span>
          {level ? (
            <span className={`kf-live__level kf-live__level--${level}`} title="backPressuredTimeMsPerSecond: ≤10 % OK, ≤50 % LOW, above HIGH">
              {level.toUpperCase()} {pct(verdict.backPressuredRatio)}
            </span>
          ) : null}
          {role && role !== "ok" ? <span className={`kf-live__role kf-live__role--${role}`}>{ROLE_TEXT[role]}{verdict.causes ? ` on ${verdict.causes.join(", ")}` : ""}</span> : null}
        </div>
      ) : null}
      {m.throttleRecordsPerSecond !== undefined ? <SinkThrottle deploymentId={live.deploymentId} nodeId={nodeId} current={m.throttleRecordsPerSecond} /> : null}
    </div>
  );
}
