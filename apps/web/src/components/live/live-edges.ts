"use client";
// Edges of a running pipeline: the throughput as the label, drawn thicker as it grows.
import { MarkerType, type EdgeMarker } from "@xyflow/react";
import { useMemo } from "react";
import type { PipelineFlowEdge } from "../../canvas/flow";
import { formatCount, formatRate } from "../../live/format";
import { useLive } from "./LiveContext";

/** The canvas's arrowhead size at stroke width 1 (EditorCanvas's defaultEdgeOptions). */
const ARROW = 16;

/** Markers scale with the stroke (markerUnits=strokeWidth): shrink them so a thick edge keeps a readable arrow. */
function arrowFor(marker: PipelineFlowEdge["markerEnd"], strokeWidth: number): EdgeMarker {
  const base: EdgeMarker = typeof marker === "object" ? marker : { type: MarkerType.ArrowClosed };
  const size = Math.round(((base.width ?? ARROW) / strokeWidth) * Math.min(1.6, 1 + strokeWidth / 10) * 10) / 10;
  return { ...base, width: size, height: size };
}

const LABEL_STYLE = { fill: "var(--kf-text)", fontSize: 11, fontFamily: "var(--kf-mono)" };
const LABEL_BG_STYLE = { fill: "var(--kf-surface)", fillOpacity: 0.9 };

/** The edges as given, with live throughput when the shown pipeline is running. */
export function useLiveEdges(edges: PipelineFlowEdge[]): PipelineFlowEdge[] {
  const live = useLive();
  const flows = live?.flows;
  const stale = Boolean(live?.unreachable);
  return useMemo(() => {
    if (!flows || flows.size === 0) return edges;
    return edges.map((edge) => {
      const flow = flows.get(edge.id);
      if (!flow) return edge;
      const queued = flow.queuedRecords !== undefined && flow.queuedRecords > 0 ? ` · ${formatCount(flow.queuedRecords)} queued` : "";
      return {
        ...edge,
        label: `${formatRate(flow.recordsPerSecond)}${queued}`,
        labelStyle: LABEL_STYLE,
        labelBgStyle: LABEL_BG_STYLE,
        labelBgPadding: [4, 2] as [number, number],
        labelBgBorderRadius: 3,
        className: `${edge.className ?? ""} kf-edge--live${stale ? " kf-edge--stale" : ""}`.trim(),
        style: { ...edge.style, strokeWidth: flow.strokeWidth },
        markerEnd: arrowFor(edge.markerEnd, flow.strokeWidth),
        ariaLabel: `${edge.id}: ${formatRate(flow.recordsPerSecond)}`,
      };
    });
  }, [edges, flows, stale]);
}
