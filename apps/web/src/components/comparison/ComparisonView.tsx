"use client";
// Two sides' alerts over the same events (by default shadow against enforcement, for the approver;
// a backtest against the enforcing version, another backtest or another engine's alert topic from
// the backtest panel): alerts in both, only in the new side, only in the old, alerts per hour of
// event time, precision and recall from a label field or a chargeback topic, and a few full alerts
// of each class with their evidence. The numbers come from comparison.compare, which reads the
// topics on the server; nothing is computed here.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import type { RouterInputs } from "../../trpc/types";
import { AlertExplanationCard } from "./AlertExplanationCard";
import "./comparison.css";

const percent = (x: number | null) => (x === null ? "–" : `${(x * 100).toFixed(1)} %`);

type CompareInput = RouterInputs["comparison"]["compare"];
export type ComparisonSide = NonNullable<CompareInput["newSide"]>;

export function ComparisonView({ pipelineId, newSide, oldSide, title = "Shadow against enforcement" }: { pipelineId: string; newSide?: ComparisonSide; oldSide?: ComparisonSide; title?: string }) {
  const trpc = useTRPC();
  const [labelKind, setLabelKind] = useState<"field" | "chargebacks">("field");
  const [labelField, setLabelField] = useState("isFraud");
  const [chargebackTopic, setChargebackTopic] = useState("");
  const [chargebackId, setChargebackId] = useState("txId");
  const labels: CompareInput["labels"] =
    labelKind === "chargebacks" && chargebackTopic.trim() && chargebackId.trim()
      ? { kind: "chargebacks", topic: chargebackTopic.trim(), idField: chargebackId.trim() }
      : labelField.trim()
        ? { kind: "field", field: labelField.trim() }
        : { kind: "none" };
  const comparison = useQuery({ ...trpc.comparison.compare.queryOptions({ pipelineId, newSide, oldSide, labelField: null, labels, samples: 3 }), retry: false });
  const data = comparison.data;
  const newName = data ? data.new.label : "new";
  const oldName = data ? data.old.label : "old";

  return (
    <section className="kf-comparison" data-testid="comparison">
      <h4>{title}</h4>
      <div className="kf-comparison__controls">
        <label>
          labels{" "}
          <select value={labelKind} onChange={(e) => setLabelKind(e.target.value === "chargebacks" ? "chargebacks" : "field")} aria-label="where the labels come from" data-testid="comparison-label-kind">
            <option value="field">a field of the records</option>
            <option value="chargebacks">a chargeback topic</option>
          </select>
        </label>
        {labelKind === "field" ? (
          <label>
            label field{" "}
            <input value={labelField} onChange={(e) => setLabelField(e.target.value)} aria-label="label field" data-testid="comparison-label" />
          </label>
        ) : (
          <>
            <input value={chargebackTopic} onChange={(e) => setChargebackTopic(e.target.value)} placeholder="chargeback topic" aria-label="chargeback topic" data-testid="comparison-chargeback-topic" />
            <input value={chargebackId} onChange={(e) => setChargebackId(e.target.value)} placeholder="transaction id field" aria-label="chargeback id field" data-testid="comparison-chargeback-id" />
          </>
        )}
        <button type="button" className="kf-button kf-button--small" onClick={() => void comparison.refetch()} disabled={comparison.isFetching} data-testid="comparison-refresh">
          {comparison.isFetching ? "Reading…" : "Refresh"}
        </button>
      </div>
      {comparison.error ? <p className="kf-comparison__note" role="status">{comparison.error.message}</p> : null}
      {data ? (
        <>
          <p className="kf-comparison__note">
            {newName} ({data.new.topics.join(", ")}) against {oldName} ({data.old.topics.join(", ")}), matched by <code>{data.new.kind === "topic" ? data.old.idField : data.new.idField}</code>
            {data.stats.range.fromTs !== null || data.stats.range.toTs !== null ? `, event time ${new Date(data.stats.range.fromTs ?? 0).toISOString()} – ${data.stats.range.toTs === null ? "end" : new Date(data.stats.range.toTs).toISOString()}` : data.scopedToRange ? `, restricted to the records of the backtest's ${data.inputFile !== null ? "file" : "range"}` : ", both topics whole"}
          </p>
          {data.inputUnavailable !== null ? (
            <p className="kf-comparison__note" role="status" data-testid="comparison-input-unavailable">
              {data.inputUnavailable}
            </p>
          ) : null}
          <table className="kf-table kf-comparison__counts">
            <tbody>
              <tr>
                <th>in both</th>
                <td data-testid="comparison-both">{data.stats.counts.both}</td>
                <th title={newName}>only new</th>
                <td data-testid="comparison-only-new">{data.stats.counts.onlyNew}</td>
                <th title={oldName}>only old</th>
                <td data-testid="comparison-only-old">{data.stats.counts.onlyOld}</td>
              </tr>
              {data.stats.scores ? (
                <tr data-testid="comparison-scores">
                  <th>precision new / old</th>
                  <td colSpan={2}>
                    {percent(data.stats.scores.new.precision)} / {percent(data.stats.scores.old.precision)}
                  </td>
                  <th>recall new / old</th>
                  <td colSpan={2}>
                    {percent(data.stats.scores.new.recall)} / {percent(data.stats.scores.old.recall)}
                    {data.stats.scores.fraudInInput !== null ? ` of ${data.stats.scores.fraudInInput} ${data.stats.scores.source === "chargebacks" ? "charged back" : "labelled fraud"}` : " (input labels not read)"}
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
          {data.stats.repeated.new + data.stats.repeated.old > 0 ? (
            <p className="kf-comparison__note">
              Records alerted more than once in one topic (counted once): new {data.stats.repeated.new}, old {data.stats.repeated.old}.
            </p>
          ) : null}
          {data.stats.outOfScope.new + data.stats.outOfScope.old > 0 ? (
            <p className="kf-comparison__note" data-testid="comparison-out-of-range">
              Alerts on records outside the backtest&apos;s range, left out: new {data.stats.outOfScope.new}, old {data.stats.outOfScope.old}.
            </p>
          ) : null}
          {data.otherVersions > 0 ? <p className="kf-comparison__note">{data.otherVersions} alerts of other versions of the rule (tagged) were left out.</p> : null}
          {data.unreadable.count > 0 ? <p className="kf-comparison__note">{data.unreadable.count} messages were not alerts: {data.unreadable.first.map((u) => `${u.topic}[${u.partition}]@${u.offset} ${u.reason}`).join("; ")}</p> : null}
          {data.deletedTopics.length > 0 ? (
            <p className="kf-comparison__note" data-testid="comparison-deleted">
              The broker has deleted the earliest messages of {data.deletedTopics.map((d) => d.topic).join(", ")} (its retention, which counts from the alerts&apos; event times): the counts cover only what is left.
            </p>
          ) : null}
          {data.missingTopics.length + data.truncatedTopics.length > 0 ? (
            <p className="kf-comparison__note">
              {data.missingTopics.length > 0 ? `Not written yet: ${data.missingTopics.join(", ")}. ` : ""}
              {data.truncatedTopics.length > 0 ? `Read only in part (too large): ${data.truncatedTopics.join(", ")}.` : ""}
            </p>
          ) : null}
          <table className="kf-table kf-comparison__hours" data-testid="comparison-per-hour">
            <thead>
              <tr>
                <th>hour (UTC, event time)</th>
                <th title={newName}>new</th>
                <th title={oldName}>old</th>
              </tr>
            </thead>
            <tbody>
              {data.stats.perHour.slice(-48).map((h) => (
                <tr key={h.hourStart}>
                  <td>{new Date(h.hourStart).toISOString().slice(0, 13).replace("T", " ")}:00</td>
                  <td>{h.new}</td>
                  <td>{h.old}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <details className="kf-comparison__samples" data-testid="comparison-samples">
            <summary>Samples, each opening to its explanation</summary>
            {(
              [
                ["only new", data.stats.samples.onlyNew.map((a) => a.value), data.new],
                ["only old", data.stats.samples.onlyOld.map((a) => a.value), data.old],
                ["in both (new)", data.stats.samples.both.map((p) => p.new.value), data.new],
              ] as const
            ).map(([title, alerts, side]) => (
              <div key={title}>
                <h5>
                  {title} ({alerts.length})
                </h5>
                {alerts.map((value, i) => (
                  <AlertExplanationCard key={i} alert={value} idField={side.idField} side={side.label} parameters={side.parameters} />
                ))}
              </div>
            ))}
          </details>
        </>
      ) : null}
    </section>
  );
}
