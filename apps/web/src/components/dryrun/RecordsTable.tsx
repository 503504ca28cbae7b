"use client";
// Records as a table: event time, key, and the records' top-level fields as columns.
import { formatCell, formatTimestamp, recordColumns } from "./dryrun-view";

export interface TableRecord {
  value: unknown;
  timestamp?: number | null;
  key?: string | undefined;
  /** Shown first when given, e.g. the sample line number. */
  line?: number;
}

export function RecordsTable({ records, testId, empty = "No records." }: { records: readonly TableRecord[]; testId?: string; empty?: string }) {
  if (records.length === 0) return <p className="kf-muted">{empty}</p>;
  const columns = recordColumns(records.map((r) => r.value));
  const hasLine = records.some((r) => r.line !== undefined);
  const hasKey = records.some((r) => r.key !== undefined);
  const hasTs = records.some((r) => r.timestamp !== undefined && r.timestamp !== null);
  return (
    <div className="kf-records" data-testid={testId}>
      <table className="kf-records__table">
        <thead>
          <tr>
            {hasLine ? <th>line</th> : null}
            {hasTs ? <th>event time</th> : null}
            {hasKey ? <th title="The key of the stream (keyBy)">stream key</th> : null}
            {columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {records.map((r, i) => {
            const v = r.value !== null && typeof r.value === "object" && !Array.isArray(r.value) ? (r.value as Record<string, unknown>) : undefined;
            return (
              <tr key={i}>
                {hasLine ? <td className="kf-records__num">{r.line ?? ""}</td> : null}
                {hasTs ? <td className="kf-records__ts">{formatTimestamp(r.timestamp)}</td> : null}
                {hasKey ? <td>{r.key ?? ""}</td> : null}
                {v
                  ? columns.map((c) => (
                      <td key={c} title={formatCell(v[c], 2_000)}>
                        {formatCell(v[c])}
                      </td>
                    ))
                  : [<td key="value" colSpan={Math.max(1, columns.length)}>{formatCell(r.value)}</td>]}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
