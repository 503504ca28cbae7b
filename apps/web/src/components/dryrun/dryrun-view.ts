// The dry run's answer arranged for the screen: the sample file as lines, the counts to pin on each
// node, the columns of a records table, one-line summaries of alerts. Framework-free.
import type { DryRunResult } from "../../server/runner-client";

export type { DryRunResult };
export type DryRunNodeView = DryRunResult["nodes"][string];
export type DryRunAlertView = DryRunResult["alerts"]["items"][number];

/** The lines of a JSON-lines file, as the runner numbers them (blank lines kept, skipped by the runner); a final newline adds none. */
export function sampleLines(text: string): string[] {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

export function countRecords(lines: readonly string[]): number {
  return lines.filter((l) => l.trim() !== "").length;
}

export interface PortBadge {
  port: string;
  count: number;
  /** A side output (`late`, `errors`, `miss`, …). */
  side: boolean;
}

const MAIN_PORTS = new Set(["out", "in"]);

/** The counts shown on a node: its main port always, side ports when something went there. */
export function portBadges(node: DryRunNodeView | undefined): PortBadge[] {
  if (!node) return [];
  const entries = Object.entries(node.ports).map(([port, p]) => ({ port, count: p.count, side: !MAIN_PORTS.has(port) }));
  return [...entries.filter((b) => !b.side), ...entries.filter((b) => b.side && b.count > 0)];
}

export function totalInput(result: DryRunResult): number {
  return Object.values(result.inputs).reduce((n, i) => n + i.records, 0);
}

/** Columns of a records table: the records' top-level fields, in first-seen order, at most `max`. */
export function recordColumns(values: readonly unknown[], max = 10): string[] {
  const seen: string[] = [];
  for (const v of values) {
    if (v === null || typeof v !== "object" || Array.isArray(v)) continue;
    for (const k of Object.keys(v)) if (!seen.includes(k)) seen.push(k);
    if (seen.length >= max * 2) break;
  }
  return seen.slice(0, max);
}

/** A cell: strings as they are, other values as compact JSON, cut at `max` characters. */
export function formatCell(value: unknown, max = 60): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Event time as an ISO string (UTC), or "" for none. */
export function formatTimestamp(ts: number | null | undefined): string {
  if (ts === null || ts === undefined || !Number.isFinite(ts)) return "";
  return new Date(ts).toISOString().replace(".000Z", "Z");
}

/** What an alert says in one line: its type or the operator's figures (`count 5`, `total 12,400`), beside its key. */
export function alertSummary(alert: DryRunAlertView): string {
  const v = alert.value;
  const parts: string[] = [];
  if (typeof v.type === "string") parts.push(v.type);
  for (const k of ["count", "total", "day", "duplicates"]) {
    const x = v[k];
    if (typeof x === "number" || typeof x === "string") parts.push(`${k} ${typeof x === "number" ? x.toLocaleString("en") : x}`);
  }
  if (parts.length === 0) {
    for (const [k, x] of Object.entries(v).slice(0, 3)) if (typeof x !== "object") parts.push(`${k} ${formatCell(x, 24)}`);
  }
  return parts.join(" · ");
}
