// The validator's issues, arranged for the canvas: per node (pinned on it) and as a sorted list
// (the problems panel). Framework-free.
import type { Issue } from "@keyflow/operators";

export interface NodeIssues {
  errors: number;
  warnings: number;
  /** Messages, errors first. */
  messages: string[];
}

const bySeverity = (a: Issue, b: Issue): number => (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1);

/** Errors first, then warnings; the validator's order within each. */
export function sortIssues(issues: readonly Issue[]): Issue[] {
  return [...issues].sort(bySeverity);
}

export function issuesByNode(issues: readonly Issue[]): Map<string, NodeIssues> {
  const byNode = new Map<string, NodeIssues>();
  for (const issue of sortIssues(issues)) {
    if (issue.nodeId === undefined) continue;
    const entry = byNode.get(issue.nodeId) ?? { errors: 0, warnings: 0, messages: [] };
    if (issue.severity === "error") entry.errors += 1;
    else entry.warnings += 1;
    entry.messages.push(issue.message);
    byNode.set(issue.nodeId, entry);
  }
  return byNode;
}

export function issueCounts(issues: readonly Issue[]): { errors: number; warnings: number } {
  const errors = issues.filter((i) => i.severity === "error").length;
  return { errors, warnings: issues.length - errors };
}

/** "2 errors, 1 warning", or "No problems". */
export function describeCounts({ errors, warnings }: { errors: number; warnings: number }): string {
  const parts = [errors ? `${errors} error${errors === 1 ? "" : "s"}` : "", warnings ? `${warnings} warning${warnings === 1 ? "" : "s"}` : ""].filter(Boolean);
  return parts.length ? parts.join(", ") : "No problems";
}
