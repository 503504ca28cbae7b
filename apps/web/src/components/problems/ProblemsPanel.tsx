"use client";
// The validator's verdict on the document, docked under the canvas: a summary that is always
// visible and, opened, every issue (errors first). An issue that names a node (or an edge) is a
// button: it selects the node, zooms to it and opens it in the inspector at the param concerned.
import { memo, useState } from "react";
import { describeCounts } from "../../canvas/issues";
import { useEditor, useValidation } from "../canvas/EditorContext";

function ProblemsPanelView() {
  const { commands } = useEditor();
  const { issues, counts } = useValidation();
  const [open, setOpen] = useState(false);
  const tone = counts.errors ? "error" : counts.warnings ? "warning" : "ok";
  const first = issues[0];
  return (
    <section className={`kf-problems-dock${open && issues.length ? " kf-problems-dock--open" : ""}`} aria-label="Problems" data-testid="problems">
      <header className="kf-problems-dock__head">
        <button
          type="button"
          className={`kf-problems__summary kf-problems__summary--${tone}`}
          data-testid="problems-summary"
          aria-expanded={open && issues.length > 0}
          disabled={issues.length === 0}
          onClick={() => setOpen((o) => !o)}
        >
          <span className="kf-problems__chevron" aria-hidden="true">
            {issues.length ? (open ? "▾" : "▸") : "✓"}
          </span>
          {describeCounts(counts)}
        </button>
        {!open && first ? (
          <button type="button" className={`kf-problems__peek kf-problem--${first.severity}`} onClick={() => commands.showIssue(first)} title={first.message}>
            {first.message}
          </button>
        ) : null}
      </header>
      {open && issues.length > 0 ? (
        <ol className="kf-problems__list" data-testid="problems-list">
          {issues.map((issue, i) => {
            const target = issue.nodeId ?? issue.edge;
            const body = (
              <>
                <span className="kf-problem__message">{issue.message}</span>
                <span className="kf-problem__meta">
                  {issue.nodeId !== undefined ? <code>{issue.nodeId}</code> : issue.edge ? <code>{issue.edge}</code> : <span>pipeline</span>}
                  {issue.param ? <code>{issue.param}</code> : null}
                  <span className="kf-problem__code">{issue.code}</span>
                </span>
              </>
            );
            return (
              <li key={`${i}:${issue.code}`} className={`kf-problem kf-problem--${issue.severity}`}>
                {target !== undefined ? (
                  <button type="button" data-testid={`problem-${i}`} data-severity={issue.severity} onClick={() => commands.showIssue(issue)} title={`Show ${issue.nodeId ? `node ${issue.nodeId}` : `edge ${issue.edge}`}`}>
                    {body}
                  </button>
                ) : (
                  <div data-testid={`problem-${i}`} data-severity={issue.severity}>
                    {body}
                  </div>
                )}
              </li>
            );
          })}
        </ol>
      ) : null}
    </section>
  );
}

export const ProblemsPanel = memo(ProblemsPanelView);
