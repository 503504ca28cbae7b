// The end-of-run report `keyflow run` prints: records in and out per node, dead letters, where the
// output went, and the checkpoint a restart would resume from.
import type { JobSummary } from "./driver";

function fmt(n: number): string {
  return Number.isFinite(n) ? n.toLocaleString("en-US") : String(n);
}

export function formatSummary(s: JobSummary): string {
  const lines: string[] = [];
  const secs = (s.durationMs / 1000).toFixed(1);
  lines.push(`pipeline "${s.pipeline}" ${s.status} in ${secs} s${s.restoredFrom !== undefined ? ` (resumed from checkpoint ${s.restoredFrom})` : ""}`);
  const header = ["node", "type", "records in", "records out", "late", "dead letters"];
  const rows = Object.entries(s.nodes).map(([id, m]) => [id, m.type, fmt(m.recordsIn), fmt(m.recordsOut), fmt(m.late), fmt(m.deadLetters)]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: string[]) => cells.map((cell, c) => (c < 2 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join("  ").trimEnd();
  lines.push(line(header));
  for (const r of rows) lines.push(line(r));
  lines.push(`dead letters: ${fmt(s.deadLetters)}${s.deadLetters > 0 || s.deadLetterTarget ? ` -> ${s.deadLetterTarget}` : ""}`);
  for (const sink of s.sinks) lines.push(`output of "${sink.nodeId}": ${sink.target}`);
  if (s.checkpointDir && s.lastCheckpoint) lines.push(`checkpoint ${s.lastCheckpoint.id} in ${s.checkpointDir}`);
  return lines.join("\n");
}
