"use client";
// One operator on the canvas: category, title, node id, the few params worth reading, and a handle
// per port. The handle id is the port id, so an edge `vel:late -> lateSink` attaches to the
// handle `late` of node `vel`. Side outputs (`late`, `errors`, …) are marked apart from the flow.
import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";
import type { OperatorFlowNode, PortHandle } from "../../canvas/flow";

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

function portClass(port: PortHandle, direction: "in" | "out"): string {
  return ["kf-port", `kf-port--${direction}`, port.side ? "kf-port--side" : "", port.declared ? "" : "kf-port--undeclared"].filter(Boolean).join(" ");
}

function Port({ port, direction }: { port: PortHandle; direction: "in" | "out" }) {
  const title = `${port.id}${port.declared ? "" : " (not a port of this operator)"}`;
  return (
    <div className={portClass(port, direction)} title={title}>
      <Handle
        type={direction === "in" ? "target" : "source"}
        position={direction === "in" ? Position.Left : Position.Right}
        id={port.id}
        isConnectable={false}
        className="kf-handle"
      />
      <span className="kf-port__label">{port.side ? port.id : port.label}</span>
    </div>
  );
}

function IssueBadge({ issues }: { issues: NonNullable<OperatorFlowNode["data"]["issues"]> }) {
  const severity = issues.errors > 0 ? "error" : "warning";
  return (
    <span className={`kf-node__issues kf-node__issues--${severity}`} title={issues.messages.join("\n")} data-testid="node-issues">
      {severity === "error" ? `${issues.errors} error${issues.errors === 1 ? "" : "s"}` : `${issues.warnings} warning${issues.warnings === 1 ? "" : "s"}`}
    </span>
  );
}

function nodeClass(data: OperatorFlowNode["data"], selected: boolean): string {
  const issue = data.issues ? (data.issues.errors > 0 ? " kf-node--error" : " kf-node--warning") : "";
  return `kf-node kf-cat-${data.category}${selected ? " kf-node--selected" : ""}${issue}`;
}

function OperatorNodeView({ data, selected }: NodeProps<OperatorFlowNode>) {
  const rows = Math.max(data.inputs.length, data.outputs.length);
  return (
    <div className={nodeClass(data, selected)} data-testid={`node-${data.nodeId}`} data-type={data.type}>
      <header className="kf-node__header">
        <div className="kf-node__kicker">
          <span className="kf-node__category">{CATEGORY_LABEL[data.category]}</span>
          <span className="kf-node__badges">
            {data.issues ? <IssueBadge issues={data.issues} /> : null}
            {data.stateful ? (
              <span className="kf-node__badge" title="Keeps keyed state or timers (checkpointed)">
                stateful
              </span>
            ) : null}
          </span>
        </div>
        <div className="kf-node__title" title={data.type}>
          {data.label ?? data.title}
        </div>
        <div className="kf-node__id">{data.nodeId}</div>
      </header>
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
                {input ? <Port port={input} direction="in" /> : <span />}
                {output ? <Port port={output} direction="out" /> : <span />}
              </div>
            );
          })}
        </div>
      ) : null}
    </div>
  );
}

export const OperatorNode = memo(OperatorNodeView);
