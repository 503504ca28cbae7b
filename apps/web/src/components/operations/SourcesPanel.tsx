"use client";
// The Sources panel of a running deployment: per source and partition, what the runner reports:
// records read, the last offset, Kafka consumer lag, the partition's watermark, idle partitions.
import { formatCount, formatWatermarkLag } from "../../live/format";
import { partitionState } from "../../live/operations";
import { useLive } from "../live/LiveContext";

export function SourcesPanel() {
  const live = useLive();
  const m = live?.metrics;
  if (!m) return null;
  const sources = Object.entries(m.sourcePartitions);
  return (
    <section className="kf-ops__section" aria-label="Sources" data-testid="sources-panel">
      <header className="kf-ops__header">
        <h3>Sources</h3>
      </header>
      {sources.length === 0 ? <p className="kf-ops__empty">No source has reported partitions yet.</p> : null}
      {sources.map(([nodeId, s]) => (
        <div key={nodeId} data-testid={`source-${nodeId}`}>
          <p className="kf-ops__meta">
            <strong>{nodeId}</strong>
            {s.input ? ` · ${s.input}` : ""} · {s.partitions.length} partition{s.partitions.length === 1 ? "" : "s"}
            {s.partitions.some((p) => p.idle) ? ` · ${s.partitions.filter((p) => p.idle).length} idle` : ""}
          </p>
          <table className="kf-ops__table">
            <thead>
              <tr>
                <th>partition</th>
                <th>state</th>
                <th>records</th>
                <th>offset</th>
                <th>lag</th>
                <th>wm lag</th>
              </tr>
            </thead>
            <tbody>
              {s.partitions.map((p) => {
                const state = partitionState(p);
                return (
                  <tr key={p.partition} data-testid={`partition-${nodeId}-${p.partition}`} data-state={state} className={state === "idle" || state === "lagging" ? "kf-ops__row--slow" : undefined}>
                    <td>{p.partition}</td>
                    <td>{state}</td>
                    <td>{formatCount(p.records)}</td>
                    <td>{p.lastOffset ?? "–"}</td>
                    <td title="Records behind the end of the partition (Kafka consumer lag)">{p.lag === null ? "–" : formatCount(p.lag)}</td>
                    <td title="The snapshot's time minus the partition's watermark (sources of raw bytes: the engine parses them, so only the node's watermark is known)">
                      {p.watermark === null ? "–" : formatWatermarkLag(p.watermark, m.at)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ))}
    </section>
  );
}
