"use client";
// One alert opened to its explanation (issue: "every alert opens to its explanation"): the records
// that made it fire, the reference data valid at its event time, the parameters of the version that
// raised it, and the alert as it was written.
import { explainAlert, type VersionParameter } from "./explain";

const iso = (ts: number) => new Date(ts).toISOString().replace("T", " ").replace("Z", "");

export function AlertExplanationCard({ alert, idField, side, parameters }: { alert: unknown; idField: string; side: string; parameters: readonly VersionParameter[] }) {
  const value = typeof alert === "object" && alert !== null && !Array.isArray(alert) ? (alert as Record<string, unknown>) : {};
  const why = explainAlert(value, idField);
  return (
    <details className="kf-explain" data-testid="alert-explanation">
      <summary>
        {why.kind ? `${why.kind} ` : ""}
        {why.id !== null ? <code>{why.id}</code> : "alert"}
        {why.ts !== null ? ` at ${iso(why.ts)}` : ""}
        {why.evidence ? ` · ${why.evidence.total} record${why.evidence.total === 1 ? "" : "s"} in its evidence` : ""}
      </summary>
      {why.evidence ? (
        <table className="kf-table kf-explain__evidence" data-testid="alert-evidence">
          <caption>
            Records that made it fire{why.evidence.records.length < why.evidence.total ? ` (the last ${why.evidence.records.length} of ${why.evidence.total})` : ""}
          </caption>
          <thead>
            <tr>
              <th>{idField}</th>
              <th>event time</th>
            </tr>
          </thead>
          <tbody>
            {why.evidence.records.map((r, i) => (
              <tr key={i}>
                <td>{r.id ?? "–"}</td>
                <td>{iso(r.ts)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {why.references.map((r) => (
        <div key={r.field} className="kf-explain__reference" data-testid="alert-reference">
          Reference <code>{r.field}</code> {r.validFrom !== null ? `valid from ${iso(r.validFrom)}` : "(none valid at the event time)"}
          <pre>{JSON.stringify(r.value, null, 2)}</pre>
        </div>
      ))}
      <div className="kf-explain__parameters" data-testid="alert-parameters">
        Parameters of {side}:
        <ul>
          {parameters.map((p) => (
            <li key={p.nodeId}>
              <code>{p.nodeId}</code> ({p.type}) <code>{JSON.stringify(p.params)}</code>
            </li>
          ))}
        </ul>
      </div>
      <pre>{JSON.stringify(alert, null, 2)}</pre>
    </details>
  );
}
