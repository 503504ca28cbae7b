"use client";
// The Skew panel of a running parallel deployment: per keyed operator, the records each subtask
// received and the hottest keys (the runner's Space-Saving sketches at the exchange), with a flag
// and a hint to salt the key when a subtask carries more than twice the mean.
import { formatCount } from "../../live/format";
import { skewVerdict } from "../../live/operations";
import { useLive } from "../live/LiveContext";

export function SkewPanel() {
  const live = useLive();
  const m = live?.metrics;
  if (!m) return null;
  return (
    <section className="kf-ops__section" aria-label="Skew" data-testid="skew-panel">
      <header className="kf-ops__header">
        <h3>Skew</h3>
      </header>
      {m.skew.length === 0 ? (
        <p className="kf-ops__empty">Skew is measured between the keyed subtasks of a parallel job (settings.parallelism above 1); this one runs in one thread.</p>
      ) : null}
      {m.skew.map((op) => {
        const v = skewVerdict(op);
        return (
          <div key={op.node} data-testid={`skew-${op.node}`} data-skewed={v.skewed ? "yes" : "no"}>
            <p className="kf-ops__meta">
              <strong>{op.node}</strong> · {op.records.length} subtasks · mean {formatCount(op.mean)} records
            </p>
            <table className="kf-ops__table">
              <thead>
                <tr>
                  <th>subtask</th>
                  <th>records</th>
                  <th>× mean</th>
                </tr>
              </thead>
              <tbody>
                {op.records.map((r, i) => (
                  <tr key={i} data-testid={`skew-${op.node}-subtask-${i}`} className={op.skewedSubtasks.includes(i) ? "kf-ops__row--slow" : undefined}>
                    <td>{i}</td>
                    <td>{formatCount(r)}</td>
                    <td>{v.loadRatio[i]?.toFixed(2)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {v.hint ? (
              <p className="kf-ops__warning" data-testid={`skew-hint-${op.node}`}>
                {v.hint}
              </p>
            ) : null}
            <table className="kf-ops__table" aria-label={`hottest keys of ${op.node}`}>
              <thead>
                <tr>
                  <th>hot key</th>
                  <th title="Estimated by the runner from a sample of the records (a Space-Saving sketch)">≈ records</th>
                  <th>share</th>
                  <th>subtask</th>
                </tr>
              </thead>
              <tbody>
                {op.hotKeys.map((k) => (
                  <tr key={`${k.subtask}:${k.key}`} title={k.error > 0 ? `may count up to ${k.error} records too many (Space-Saving)` : undefined}>
                    <td>
                      <code>{k.key}</code>
                    </td>
                    <td>{formatCount(k.count)}</td>
                    <td>{Math.round(k.share * 1000) / 10} %</td>
                    <td>{k.subtask}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        );
      })}
    </section>
  );
}
