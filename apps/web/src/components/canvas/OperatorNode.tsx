"use client";
// One operator on the canvas: category, title, node id, the few params worth reading, and a handle
// per port. The handle id is the port id, so an edge `vel:late -> lateSink` attaches to the
// handle `late` of node `vel`. Handles are coloured by the kind of stream they carry or take
// (unkeyed, keyed, reference); side outputs (`late`, `errors`, …) are square and set apart.
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import type { StreamKind } from "@keyflow/operators";
import type { OperatorFlowNode, PortHandle } from "../../canvas/flow";
import { NodeOverlayBadges } from "../dryrun/NodeOverlayBadges";
import { LiveNodeFigures } from "../live/LiveNodeFigures";
import { useHandleStatus, type HandleStatus } from "./connect-check";

const CATEGORY_LABEL: Record<OperatorFlowNode["data"]["category"], string> = {
  source: "Source",
  keying: "Keying",
  transform: "Transform",
  window: "Window",
  pattern: "Fraud pattern",
  enrichment: "Enrichment",
  custom: "Custom",
  sink: "Sink",
  unknown: "Unknown operator",
};

const KIND_TEXT: Record<StreamKind, string> = { stream: "unkeyed stream", keyed: "keyed stream", reference: "reference (broadcast) stream" };

/** The colour class of a port: what it carries (outputs) or the narrowest thing it takes (inputs). */
export function portTone(port: PortHandle, direction: "in" | "out"): string {
  if (!port.declared) return "undeclared";
  if (direction === "out") {
    if (port.id === "errors") return "errors";
    if (port.side) return "side";
    return port.kind ?? "unknown";
  }
  const accepts = port.accepts ?? [];
  if (accepts.includes("reference")) return "reference";
  if (accepts.length === 1 && accepts[0] === "keyed") return "keyed";
  return "stream";
}

function portTitle(port: PortHandle, direction: "in" | "out"): string {
  if (!port.declared) return `${port.id}: not a port of this operator`;
  const what =
    direction === "out"
      ? `sends ${port.kind ? `a ${KIND_TEXT[port.kind]}` : "the kind of stream it receives"}`
      : `takes ${(port.accepts ?? []).map((k) => `a ${KIND_TEXT[k]}`).join(" or ") || "nothing"}`;
  return `${port.id} (${port.label}): ${what}${port.description ? `\n${port.description}` : ""}`;
}

function Port({ nodeId, port, direction, connectable, status }: { nodeId: string; port: PortHandle; direction: "in" | "out"; connectable: boolean; status: HandleStatus }) {
  const tone = portTone(port, direction);
  const cls = ["kf-port", `kf-port--${direction}`, port.side ? "kf-port--side" : "", port.declared ? "" : "kf-port--undeclared"].filter(Boolean).join(" ");
  return (
    <div className={cls} title={portTitle(port, direction)}>
      <Handle
        type={direction === "in" ? "target" : "source"}
        position={direction === "in" ? Position.Left : Position.Right}
        id={port.id}
        isConnectable={connectable}
        className={`kf-handle kf-handle--${tone}${status ? ` kf-handle--${status}` : ""}`}
        data-testid={`handle-${nodeId}-${port.id}`}
        data-kind={tone}
        aria-label={`${nodeId} ${direction === "in" ? "input" : "output"} ${port.id}`}
      />
      <span className="kf-port__label">{port.side ? port.id : port.label}</span>
    </div>
  );
}

function IssueBadge({ issues }: { issues: NonNullable<OperatorFlowNode["data"]["issues"]> }) {
  const severity = issues.errors > 0 ? "error" : "warning";
  return (
    <span className={`kf-node__issues kf-node__issues--${severity}`} title={issues.messages.join("\n")} data-testid="node-issues" data-severity={severity}>
      {severity === "error" ? `${issues.errors} error${issues.errors === 1 ? "" : "s"}` : `${issues.warnings} warning${issues.warnings === 1 ? "" : "s"}`}
    </span>
  );
}

function nodeClass(data: OperatorFlowNode["data"], selected: boolean): string {
  const issue = data.issues ? (data.issues.errors > 0 ? " kf-node--error" : " kf-node--warning") : "";
  return `kf-node kf-cat-${data.category}${selected ? " kf-node--selected" : ""}${issue}`;
}

function OperatorNodeView({ data, selected, isConnectable }: NodeProps<OperatorFlowNode>) {
  const status = useHandleStatus(data.nodeId);
  const rows = Math.max(data.inputs.length, data.outputs.length);
  return (
    <div className={nodeClass(data, selected)} data-testid={`node-${data.nodeId}`} data-type={data.type}>
      <header className="kf-node__header">
        <div className="kf-node__kicker">
          <span className="kf-node__category">{CATEGORY_LABEL[data.category]}</span>
          <span className="kf-node__badges">
            {data.issues ? <IssueBadge issues={data.issues} /> : null}
            {data.notes ? (
              <span className="kf-node__badge kf-node__badge--note" title={data.notes} data-testid="node-notes">
                notes
              </span>
            ) : null}
            {data.stateful ? (
              <span className="kf-node__badge" title="Keeps keyed state or timers (checkpointed)">
                stateful
              </span>
            ) : null}
          </span>
        </div>
        <div className="kf-node__title" title={data.label ? `${data.label} (${data.title}, ${data.type})` : data.type}>
          {data.label ?? data.title}
        </div>
        <div className="kf-node__id">{data.label ? `${data.nodeId} · ${data.title}` : data.nodeId}</div>
      </header>
      <NodeOverlayBadges nodeId={data.nodeId} />
      <LiveNodeFigures nodeId={data.nodeId} />
      {data.params.length > 0 ? (
        <dl className="kf-node__params">
          {data.params.map((p) => (
            <div key={p.name} className="kf-node__param">
              <dt>{p.name}</dt>
              <dd title={p.value}>{p.value}</dd>
            </div>
          ))}
        </dl>
      ) : null}
      {rows > 0 ? (
        <div className="kf-node__ports">
          {Array.from({ length: rows }, (_, i) => {
            const input = data.inputs[i];
            const output = data.outputs[i];
            return (
              <div key={i} className="kf-port-row">
                {input ? <Port nodeId={data.nodeId} port={input} direction="in" connectable={isConnectable} status={status(input.id, "in")} /> : <span />}
                {output ? <Port nodeId={data.nodeId} port={output} direction="out" connectable={isConnectable} status={status(output.id, "out")} /> : <span />}
              </div>
            );
          })}
        </div>
      ) : null}
    </div>
  );
}

export const OperatorNode = memo(OperatorNodeView);
