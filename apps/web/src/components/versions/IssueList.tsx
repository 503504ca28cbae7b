"use client";
import type { Issue } from "@keyflow/operators";

/** The validator's issues, errors first, as a compact list. */
export function IssueList({ issues, max = 12, testId }: { issues: readonly Issue[]; max?: number; testId?: string }) {
  const sorted = [...issues].sort((a, b) => (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1));
  if (sorted.length === 0) return null;
  return (
    <ul className="kf-issues" data-testid={testId}>
      {sorted.slice(0, max).map((issue, i) => (
        <li key={i} className={`kf-issues__item kf-issues__item--${issue.severity}`}>
          <span className="kf-issues__sev">{issue.severity}</span> {issue.message}
        </li>
      ))}
      {sorted.length > max ? <li className="kf-muted">…and {sorted.length - max} more</li> : null}
    </ul>
  );
}
