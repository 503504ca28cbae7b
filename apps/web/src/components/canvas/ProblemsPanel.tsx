"use client";
// The validator's verdict on the document shown: a summary, and on demand the list of issues;
// clicking one that names a node brings that node into view and selects it.
import { Panel, useReactFlow } from "@xyflow/react";
import { memo, useCallback, useMemo, useState } from "react";
import type { Issue } from "@keyflow/operators";
import type { OperatorFlowNode } from "../../canvas/flow";
import { describeCounts, issueCounts, sortIssues } from "../../canvas/issues";

function ProblemsPanelView({ issues }: { issues: readonly Issue[] }) {
  const [open, setOpen] = useState(false);
  const sorted = useMemo(() => sortIssues(issues), [issues]);
  const counts = useMemo(() => issueCounts(issues), [issues]);
  const flow = useReactFlow<OperatorFlowNode>();
  const focus = useCallback(
    (nodeId: string) => {
      flow.setNodes((nodes) => nodes.map((n) => (n.selected === (n.id === nodeId) ? n : { ...n, selected: n.id === nodeId })));
      void flow.fitView({ nodes: [{ id: nodeId }], duration: 300, maxZoom: 1.2, padding: 0.6 });
    },
    [flow],
  );
  const tone = counts.errors ? "error" : counts.warnings ? "warning" : "ok";
  return (
    <Panel position="top-right" className="kf-problems">
      <button
        type="button"
        className={`kf-problems__summary kf-problems__summary--${tone}`}
        data-testid="problems-summary"
        aria-expanded={open}
        disabled={issues.length === 0}
        onClick={() => setOpen((o) => !o)}
      >
        {tone === "ok" ? "✓ " : ""}
        {describeCounts(counts)}
      </button>
      {open && sorted.length > 0 ? (
        <ol className="kf-problems__list" data-testid="problems-list">
          {sorted.map((issue, i) => (
            <li key={`${i}:${issue.code}`} className={`kf-problem kf-problem--${issue.severity}`}>
              {issue.nodeId !== undefined ? (
                <button type="button" onClick={() => issue.nodeId !== undefined && focus(issue.nodeId)} title={`Show node ${issue.nodeId}`}>
                  {issue.message}
                </button>
              ) : (
                <span>{issue.message}</span>
              )}
            </li>
          ))}
        </ol>
      ) : null}
    </Panel>
  );
}

export const ProblemsPanel = memo(ProblemsPanelView);
