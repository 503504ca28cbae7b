"use client";
// "What would this rule flag?": runs the document on the canvas on a sample (an uploaded JSON-lines
// file, or the last N records of its source's Kafka topic) through the runner's bounded mode. The
// counts go on the canvas (NodeOverlayBadges); here: the alerts with the sample records that caused
// them, the records of the chosen node and port, and the dead letters.
import { useMutation } from "@tanstack/react-query";
import { useMemo } from "react";
import { parseEdgeEnd, type PipelineDocument } from "@keyflow/operators";
import { useTRPC } from "../../trpc/react";
import { usePipelineTools, type DryRunSampleChoice } from "../versions/tools-context";
import { IssueList } from "../versions/IssueList";
import { alertSummary, countRecords, formatTimestamp, portBadges, sampleLines, totalInput, type DryRunResult } from "./dryrun-view";
import { RecordsTable } from "./RecordsTable";

/** Sources, the one a single sample goes to first (the first feeding a main input). */
function sourcesOf(doc: PipelineDocument): { id: string; type: string; topic?: string }[] {
  const refOnly = new Set(doc.nodes.filter((n) => n.type.startsWith("source.")).map((n) => n.id));
  for (const e of doc.edges) if ((parseEdgeEnd(e.to).port ?? "in") !== "reference") refOnly.delete(parseEdgeEnd(e.from).nodeId);
  return doc.nodes
    .filter((n) => n.type.startsWith("source."))
    .sort((a, b) => Number(refOnly.has(a.id)) - Number(refOnly.has(b.id)))
    .map((n) => ({ id: n.id, type: n.type, ...(typeof n.params.topic === "string" ? { topic: n.params.topic } : {}) }));
}

export function DryRunPanel() {
  const { document, dryRun, setDryRun, selectPort } = usePipelineTools();
  const trpc = useTRPC();
  const sources = useMemo(() => sourcesOf(document), [document]);
  const { sample } = dryRun;
  const setSample = (patch: Partial<DryRunSampleChoice>) => setDryRun((s) => ({ ...s, sample: { ...s.sample, ...patch } }));
  const source = sources.find((s) => s.id === sample.sourceId) ?? sources[0];
  const { mode, file, topic, lastN } = sample;

  const run = useMutation(
    trpc.pipeline.dryRun.mutationOptions({
      onMutate: () => setDryRun((s) => ({ ...s, status: "running" })),
      onError: (error) => setDryRun((s) => ({ status: "failed", sample: s.sample, error: error.message })),
    }),
  );

  const canRun = source !== undefined && !run.isPending && (mode === "file" ? file !== null && countRecords(file.lines) > 0 : lastN > 0);
  const start = () => {
    if (!source) return;
    const sample = mode === "file" ? { kind: "lines" as const, lines: file?.lines ?? [] } : { kind: "topic" as const, lastN, ...(topic.trim() ? { topic: topic.trim() } : {}) };
    const ranOn = document;
    run.mutate({ graph: ranOn, sample, sourceNodeId: source.id }, { onSuccess: (result) => setDryRun((s) => ({ status: "done", sample: s.sample, result, document: ranOn })) });
  };

  const result = dryRun.status === "done" ? dryRun.result : undefined;
  const stale = result !== undefined && dryRun.document !== document;
  const issues = run.error?.data?.pipelineIssues ?? [];

  return (
    <div className="kf-dryrun" data-testid="dryrun-panel">
      <section className="kf-dryrun__setup">
        {sources.length === 0 ? <p className="kf-muted">The pipeline has no source to feed a sample to.</p> : null}
        {sources.length > 1 ? (
          <label className="kf-field">
            <span>Sample for</span>
            <select className="kf-select" value={source?.id ?? ""} onChange={(e) => setSample({ sourceId: e.target.value })} data-testid="dryrun-source">
              {sources.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.id} ({s.type})
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <div className="kf-segmented" role="radiogroup" aria-label="Sample">
          <label>
            <input type="radio" name="dryrun-mode" checked={mode === "file"} onChange={() => setSample({ mode: "file" })} data-testid="dryrun-mode-file" /> JSON-lines file
          </label>
          <label>
            <input type="radio" name="dryrun-mode" checked={mode === "topic"} onChange={() => setSample({ mode: "topic" })} data-testid="dryrun-mode-topic" /> Last N from topic
          </label>
        </div>
        {mode === "file" ? (
          <div className="kf-field">
            <input
              type="file"
              accept=".jsonl,.ndjson,.json,.txt,application/x-ndjson,application/json,text/plain"
              data-testid="dryrun-file"
              aria-label="Sample file (JSON lines)"
              onChange={async (e) => {
                const f = e.target.files?.[0];
                setSample({ file: f ? { name: f.name, lines: sampleLines(await f.text()) } : null });
              }}
            />
            {file ? (
              <span className="kf-muted" data-testid="dryrun-file-summary">
                {countRecords(file.lines).toLocaleString("en")} records in {file.name}
              </span>
            ) : null}
          </div>
        ) : (
          <div className="kf-dryrun__topic">
            <label className="kf-field">
              <span>Topic</span>
              <input className="kf-input" placeholder={source?.topic ?? "topic"} value={topic} onChange={(e) => setSample({ topic: e.target.value })} data-testid="dryrun-topic" />
            </label>
            <label className="kf-field">
              <span>Last N</span>
              <input className="kf-input" type="number" min={1} max={10_000} value={lastN} onChange={(e) => setSample({ lastN: Math.max(1, Math.min(10_000, Number(e.target.value) || 1)) })} data-testid="dryrun-lastn" />
            </label>
          </div>
        )}
        <button type="button" className="kf-button kf-button--primary" disabled={!canRun} onClick={start} data-testid="dryrun-run">
          {run.isPending ? "Running…" : result ? "Run again" : "Run dry run"}
        </button>
        {dryRun.status === "failed" ? (
          <div className="kf-form-error" role="alert" data-testid="dryrun-error">
            {dryRun.error}
            <IssueList issues={issues} max={6} />
          </div>
        ) : null}
      </section>
      {result ? <DryRunResultView result={result} stale={stale} selected={dryRun.selected} onSelect={selectPort} /> : null}
    </div>
  );
}

function DryRunResultView({ result, stale, selected, onSelect }: { result: DryRunResult; stale: boolean; selected: { nodeId: string; port: string } | undefined; onSelect: (nodeId: string, port: string) => void }) {
  const port = selected ? result.nodes[selected.nodeId]?.ports[selected.port] : undefined;
  return (
    <section className="kf-dryrun__result" data-testid="dryrun-result">
      <p className="kf-dryrun__summary" data-testid="dryrun-summary">
        {totalInput(result).toLocaleString("en")} records in →{" "}
        <strong>
          <span data-testid="dryrun-alert-count">{result.alerts.count}</span> alert{result.alerts.count === 1 ? "" : "s"}
        </strong>{" "}
        · <span data-testid="dryrun-deadletter-count">{result.deadLetters.count}</span> dead letter{result.deadLetters.count === 1 ? "" : "s"} · {result.durationMs} ms
      </p>
      {stale ? <p className="kf-text-warning">The canvas changed since this run: run again to see the effect.</p> : null}
      {result.warnings.length > 0 ? (
        <ul className="kf-issues">
          {result.warnings.map((w, i) => (
            <li key={i} className="kf-issues__item kf-issues__item--warning">
              {w}
            </li>
          ))}
        </ul>
      ) : null}

      <h4 className="kf-dryrun__heading">Per node</h4>
      <table className="kf-dryrun__nodes" data-testid="dryrun-nodes">
        <thead>
          <tr>
            <th>node</th>
            <th>in</th>
            <th>ports (click for records)</th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(result.nodes).map(([id, n]) => (
            <tr key={id} data-testid={`dryrun-node-${id}`}>
              <td>
                <code>{id}</code> <span className="kf-muted">{n.type}</span>
              </td>
              <td>{n.recordsIn.toLocaleString("en")}</td>
              <td>
                {portBadges(n).map((b) => (
                  <button
                    key={b.port}
                    type="button"
                    className={`kf-chip${b.side ? " kf-chip--side" : ""}${selected?.nodeId === id && selected.port === b.port ? " kf-chip--selected" : ""}`}
                    onClick={() => onSelect(id, b.port)}
                    data-testid={`dryrun-port-${id}-${b.port}`}
                  >
                    {b.port} {b.count.toLocaleString("en")}
                  </button>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>

      {selected && port ? (
        <div className="kf-dryrun__records">
          <h4 className="kf-dryrun__heading">
            <code>
              {selected.nodeId}:{selected.port}
            </code>{" "}
            · {port.count.toLocaleString("en")} record{port.count === 1 ? "" : "s"}
            {port.count > port.records.length ? ` (first ${port.records.length})` : ""}
          </h4>
          <RecordsTable records={port.records} testId="dryrun-records" />
        </div>
      ) : null}

      <h4 className="kf-dryrun__heading">Alerts ({result.alerts.count.toLocaleString("en")})</h4>
      {result.alerts.count === 0 ? <p className="kf-muted">This sample raises no alert.</p> : null}
      <ol className="kf-alerts" data-testid="dryrun-alerts">
        {result.alerts.items.map((a, i) => (
          <li key={i} className="kf-alerts__item" data-testid={`dryrun-alert-${i}`}>
            <details>
              <summary>
                <span className="kf-alerts__sink">{a.sinkNodeId}</span>
                {a.key !== undefined ? <code className="kf-alerts__key">{a.key}</code> : null}
                <span className="kf-alerts__what">{alertSummary(a)}</span>
                <span className="kf-muted">{formatTimestamp(a.timestamp)}</span>
                <span className="kf-muted kf-alerts__evidence-count">
                  {a.evidence.length} of {a.evidenceTotal} record{a.evidenceTotal === 1 ? "" : "s"}
                </span>
              </summary>
              <RecordsTable records={a.evidence.map((e) => ({ value: e.value, timestamp: e.ts, line: e.line }))} testId={`dryrun-evidence-${i}`} empty="The operator quoted no sample record." />
              <pre className="kf-alerts__json">{JSON.stringify(a.value, null, 2)}</pre>
            </details>
          </li>
        ))}
      </ol>

      {result.deadLetters.count > 0 ? (
        <>
          <h4 className="kf-dryrun__heading">Dead letters ({result.deadLetters.count.toLocaleString("en")})</h4>
          <ul className="kf-deadletters" data-testid="dryrun-deadletters">
            {result.deadLetters.items.map((d, i) => (
              <li key={i}>
                <code>
                  {d.nodeId}
                  {d.port ? `:${d.port}` : ""}
                </code>
                {d.line !== undefined ? <span className="kf-muted"> line {d.line}</span> : null} {d.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
