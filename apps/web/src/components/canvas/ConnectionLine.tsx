"use client";
// The line drawn while a connection is dragged, with a hint beside the cursor: what the port
// sends, and over a handle whether the connection would work — and if not, the shared
// validator's reason ("velocity needs a keyed input — add a keyBy before it").
import { getBezierPath, type ConnectionLineComponentProps } from "@xyflow/react";
import { useContext } from "react";
import type { OperatorFlowNode } from "../../canvas/flow";
import { edgeEnd } from "../../canvas/graph-edit";
import { ConnectCheckContext } from "./connect-check";

const HINT_WIDTH = 300;

export function ConnectionLine({ fromX, fromY, toX, toY, fromPosition, toPosition, fromNode, fromHandle, toNode, toHandle }: ConnectionLineComponentProps<OperatorFlowNode>) {
  const check = useContext(ConnectCheckContext);
  const [path] = getBezierPath({ sourceX: fromX, sourceY: fromY, sourcePosition: fromPosition, targetX: toX, targetY: toY, targetPosition: toPosition });

  const fromIsOutput = fromHandle.type === "source";
  const fromPort = fromHandle.id ?? (fromIsOutput ? "out" : "in");
  let tone: "neutral" | "ok" | "refused" = "neutral";
  let text: string;
  if (toNode && toHandle && check) {
    const toPort = toHandle.id ?? (toHandle.type === "source" ? "out" : "in");
    const from = fromIsOutput ? edgeEnd(fromNode.id, fromPort, "from") : edgeEnd(toNode.id, toPort, "from");
    const to = fromIsOutput ? edgeEnd(toNode.id, toPort, "to") : edgeEnd(fromNode.id, fromPort, "to");
    const result = toHandle.type === fromHandle.type ? { ok: false as const, reason: fromIsOutput ? "drop on an input (left side of a node)" : "drop on an output (right side of a node)" } : check(from, to);
    tone = result.ok ? "ok" : "refused";
    text = result.ok ? `Connect ${from} → ${to}` : result.reason;
  } else {
    const port = (fromIsOutput ? fromNode.data.outputs : fromNode.data.inputs).find((p) => p.id === fromPort);
    const kind = fromIsOutput ? (port?.kind ? `${port.kind} stream` : "records") : (port?.accepts ?? []).join(" or ");
    text = fromIsOutput ? `${fromNode.id}:${fromPort} sends ${kind} — drop on an input` : `${fromNode.id}:${fromPort} takes ${kind} — drop on an output`;
  }

  return (
    <g className={`kf-connection kf-connection--${tone}`}>
      <path d={path} fill="none" className="kf-connection__path" />
      <circle cx={toX} cy={toY} r={4} className="kf-connection__end" />
      <foreignObject x={toX + 14} y={toY + 12} width={HINT_WIDTH} height={120} className="kf-connection__hint-box">
        <div className={`kf-connection__hint kf-connection__hint--${tone}`} data-testid="connection-hint" data-tone={tone}>
          {tone === "refused" ? <strong>Cannot connect: </strong> : null}
          {text}
        </div>
      </foreignObject>
    </g>
  );
}
