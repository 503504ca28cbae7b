"use client";
// Backtests of the pipeline on screen: replay a version over a recorded range (a Kafka topic between
// two offsets or two instants, or a JSON-lines file uploaded here or already on the runner) at full speed, watch its progress (records
// read, still to read, alerts), and once it has finished compare it with the enforcing version,
// another backtest over the same range, or another rule engine's alert topic. The server builds the
// bounded job and reads the topics; this panel only collects the choices.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { useTRPC } from "../../trpc/react";
import type { PipelineDetail, RouterInputs, RouterOutputs } from "../../trpc/types";
import { ComparisonView, type ComparisonSide } from "../comparison/ComparisonView";
import { parseInstant, parseOffsets } from "./range-input";
import "./backtests.css";

type Range = RouterInputs["backtests"]["start"]["range"];
type Backtest = RouterOutputs["backtests"]["list"][number];
type Bound = "whole" | "offsets" | "time";

/** POST /api/backtests/files answers the stored file (its path on the runner), or why it was refused. */
const uploadedSchema = z.object({ path: z.string(), name: z.string(), bytes: z.number(), records: z.number() });
const refusalSchema = z.object({ error: z.object({ message: z.string() }) });
type Uploaded = z.infer<typeof uploadedSchema>;

/** Streams the picked file to the web server, which hands it on to the runner (server/services/backtests-files.ts). */
async function uploadFile(picked: File): Promise<Uploaded> {
  const res = await fetch("/api/backtests/files", {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", "x-keyflow-csrf": "1", "x-keyflow-file-name": encodeURIComponent(picked.name) },
    body: picked,
  });
  const body: unknown = await res.json().catch(() => null);
  if (res.ok) return uploadedSchema.parse(body);
  const refusal = refusalSchema.safeParse(body);
  throw new Error(refusal.success ? refusal.data.error.message : `${picked.name}: the upload failed (HTTP ${res.status})`);
}

function rangeText(range: Backtest["range"]): string {
  if (!range) return "?";
  if (range.kind === "file") return range.name ? `file ${range.name} (${range.path})` : `file ${range.path}`;
  const end = (b: typeof range.from | typeof range.to) =>
    b.by === "offsets" ? `offsets ${Object.entries(b.offsets).map(([p, o]) => `${p}:${o}`).join(",")}` : b.by === "time" ? new Date(b.ts).toISOString().replace("T", " ").replace(".000Z", "Z") : b.by;
  return `${range.topic ?? "source topic"} ${end(range.from)} → ${end(range.to)}`;
}

export function BacktestPanel({ pipeline }: { pipeline: PipelineDetail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery({
    ...trpc.backtests.list.queryOptions({ pipelineId: pipeline.id }),
    // Poll while something runs: progress comes from the runner, the end from the database.
    refetchInterval: (q) => (q.state.data?.some((b) => b.status === "running" || b.status === "pending") ? 1_000 : false),
  });
  const start = useMutation(trpc.backtests.start.mutationOptions({ onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.backtests.list.queryKey({ pipelineId: pipeline.id }) }) }));
  const [versionId, setVersionId] = useState(pipeline.versions[0]?.id ?? "");
  const [kind, setKind] = useState<"kafka" | "file">("kafka");
  const [topic, setTopic] = useState("");
  const [fromBy, setFromBy] = useState<Bound>("whole");
  const [toBy, setToBy] = useState<Bound>("whole");
  const [fromText, setFromText] = useState("");
  const [toText, setToText] = useState("");
  const [file, setFile] = useState("");
  const [uploaded, setUploaded] = useState<Uploaded | null>(null);
  const [uploading, setUploading] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [against, setAgainst] = useState<"enforcing" | "backtest" | "topic">("enforcing");
  const [otherBacktest, setOtherBacktest] = useState("");
  const [otherTopic, setOtherTopic] = useState("");
  const [otherIdField, setOtherIdField] = useState("txId");

  /** A typed bound (offsets or an instant), or "whole" for the topic's own start or end. */
  const part = (by: Exclude<Bound, "whole">, text: string, side: "from" | "to"): { by: "offsets"; offsets: Record<string, number> } | { by: "time"; ts: number } => {
    if (by === "offsets") {
      const offsets = parseOffsets(text);
      if (!offsets) throw new Error(`${side}: offsets are "partition:offset" pairs, e.g. 0:100, 1:250`);
      return { by: "offsets", offsets };
    }
    const ts = parseInstant(text);
    if (ts === null) throw new Error(`${side}: an instant is ISO-8601 (2026-12-01T10:00:00Z) or epoch ms`);
    return { by: "time", ts };
  };

  const pick = (picked: File | undefined) => {
    setProblem(null);
    setUploaded(null);
    if (!picked) return;
    setUploading(true);
    uploadFile(picked)
      .then((stored) => {
        setUploaded(stored);
        setFile(stored.path);
      })
      .catch((error: unknown) => setProblem(error instanceof Error ? error.message : String(error)))
      .finally(() => setUploading(false));
  };

  const submit = () => {
    setProblem(null);
    let range: Range;
    try {
      range =
        kind === "file"
          ? { kind: "file", path: file.trim(), ...(uploaded && uploaded.path === file.trim() ? { name: uploaded.name } : {}) }
          : {
              kind: "kafka",
              ...(topic.trim() ? { topic: topic.trim() } : {}),
              from: fromBy === "whole" ? { by: "earliest" } : part(fromBy, fromText, "from"),
              to: toBy === "whole" ? { by: "latest" } : part(toBy, toText, "to"),
            };
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
      return;
    }
    start.mutate({ versionId, range }, { onSuccess: (b) => setSelected(b.id) });
  };

  const chosen = list.data?.find((b) => b.id === selected) ?? null;
  const sameRange = (list.data ?? []).filter((b) => chosen && b.id !== chosen.id && JSON.stringify(b.range) === JSON.stringify(chosen.range));
  const oldSide: ComparisonSide | null =
    against === "enforcing" ? { kind: "enforcing" } : against === "backtest" ? (otherBacktest ? { kind: "backtest", backtestId: otherBacktest } : null) : otherTopic.trim() && otherIdField.trim() ? { kind: "topic", topic: otherTopic.trim(), idField: otherIdField.trim() } : null;

  return (
    <section className="kf-backtests" data-testid="backtest-panel">
      <h3>Backtests</h3>
      {pipeline.versions.length === 0 ? (
        <p>Save a version first: a backtest replays a version.</p>
      ) : (
        <div className="kf-backtests__form">
          <label>
            version{" "}
            <select value={versionId} onChange={(e) => setVersionId(e.target.value)} data-testid="backtest-version">
              {pipeline.versions.map((v) => (
                <option key={v.id} value={v.id}>
                  v{v.number} {v.message ? `— ${v.message}` : ""}
                </option>
              ))}
            </select>
          </label>
          <label>
            over{" "}
            <select value={kind} onChange={(e) => setKind(e.target.value === "file" ? "file" : "kafka")} data-testid="backtest-kind">
              <option value="kafka">a Kafka topic</option>
              <option value="file">a recorded file (JSON lines)</option>
            </select>
          </label>
          {kind === "file" ? (
            <>
              <input type="file" accept=".jsonl,.ndjson,.json,.txt,application/x-ndjson" onChange={(e) => pick(e.target.files?.[0])} aria-label="upload a file" data-testid="backtest-upload" />
              {uploading ? <span>uploading…</span> : null}
              {uploaded ? (
                <span data-testid="backtest-uploaded">
                  {uploaded.name}: {uploaded.records} records
                </span>
              ) : null}
              <input value={file} onChange={(e) => setFile(e.target.value)} placeholder="or a file on the runner: recorded/payments.jsonl" aria-label="file" data-testid="backtest-file" />
            </>
          ) : (
            <>
              <input value={topic} onChange={(e) => setTopic(e.target.value)} placeholder="topic (default: the version's source)" aria-label="topic" data-testid="backtest-topic" />
              {(
                [
                  ["from", fromBy, setFromBy, fromText, setFromText, "start"],
                  ["to", toBy, setToBy, toText, setToText, "current end"],
                ] as const
              ).map(([side, by, setBy, text, setText, whole]) => (
                <span key={side} className="kf-backtests__bound">
                  {side}{" "}
                  <select value={by} onChange={(e) => setBy(e.target.value === "offsets" ? "offsets" : e.target.value === "time" ? "time" : "whole")} data-testid={`backtest-${side}-by`}>
                    <option value="whole">the topic&apos;s {whole}</option>
                    <option value="offsets">offsets</option>
                    <option value="time">an instant</option>
                  </select>
                  {by !== "whole" ? (
                    <input value={text} onChange={(e) => setText(e.target.value)} placeholder={by === "offsets" ? "0:100, 1:250" : "2026-12-01T10:00:00Z"} aria-label={`${side} ${by}`} data-testid={`backtest-${side}`} />
                  ) : null}
                </span>
              ))}
            </>
          )}
          <button type="button" className="kf-button kf-button--small" disabled={start.isPending || uploading || !versionId} onClick={submit} data-testid="backtest-start">
            {start.isPending ? "Starting…" : "Run backtest"}
          </button>
        </div>
      )}
      {problem ?? start.error?.message ? (
        <p className="kf-auth__error" role="alert">
          {problem ?? start.error?.message}
        </p>
      ) : null}
      {list.data && list.data.length > 0 ? (
        <table className="kf-table kf-backtests__list" data-testid="backtest-list">
          <colgroup>
            <col style={{ width: "14%" }} />
            <col style={{ width: "12%" }} />
            <col style={{ width: "17%" }} />
            <col style={{ width: "22%" }} />
            <col style={{ width: "12%" }} />
            <col style={{ width: "23%" }} />
          </colgroup>
          <thead>
            <tr>
              <th>started</th>
              <th>version</th>
              <th>status</th>
              <th>records</th>
              <th>alerts</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.map((b) => {
              const total = b.counts && b.counts.remaining !== null ? b.counts.records + b.counts.remaining : null;
              return [
                <tr key={b.id} data-testid="backtest-row" data-backtest={b.id} data-status={b.status} className={b.id === selected ? "kf-backtests__selected" : undefined}>
                  <td title={`${b.id}, by ${b.createdBy}`}>{new Date(b.createdAt).toISOString().slice(11, 19)}</td>
                  <td>v{b.versionNumber}</td>
                  <td data-testid="backtest-status" title={b.failure ?? undefined}>
                    {b.status}
                    {b.failure ? `: ${b.failure}` : ""}
                  </td>
                  <td data-testid="backtest-records">
                    {b.counts ? `${b.counts.records}${total !== null && b.status !== "finished" ? ` of ${total}` : ""}` : "–"}
                    {total ? <progress max={total} value={b.counts?.records ?? 0} /> : null}
                  </td>
                  <td data-testid="backtest-alerts">{b.counts ? b.counts.alerts : "–"}</td>
                  <td>
                    <button type="button" className="kf-button kf-button--small" disabled={b.status !== "finished"} onClick={() => setSelected(b.id)} data-testid="backtest-compare">
                      Compare
                    </button>
                  </td>
                </tr>,
                <tr key={`${b.id}-range`} className={`kf-backtests__range${b.id === selected ? " kf-backtests__selected" : ""}`}>
                  <td colSpan={6}>{rangeText(b.range)}</td>
                </tr>,
              ];
            })}
          </tbody>
        </table>
      ) : null}
      {chosen && chosen.status === "finished" ? (
        <div className="kf-backtests__comparison" data-testid="backtest-comparison">
          <div className="kf-backtests__form">
            against{" "}
            <select value={against} onChange={(e) => setAgainst(e.target.value === "backtest" ? "backtest" : e.target.value === "topic" ? "topic" : "enforcing")} data-testid="backtest-against">
              <option value="enforcing">the enforcing version</option>
              <option value="backtest">another backtest over the same range</option>
              <option value="topic">another engine&apos;s alert topic</option>
            </select>
            {against === "backtest" ? (
              <select value={otherBacktest} onChange={(e) => setOtherBacktest(e.target.value)} data-testid="backtest-other">
                <option value="">choose…</option>
                {sameRange.map((b) => (
                  <option key={b.id} value={b.id}>
                    v{b.versionNumber} ({b.id})
                  </option>
                ))}
              </select>
            ) : null}
            {against === "topic" ? (
              <>
                <input value={otherTopic} onChange={(e) => setOtherTopic(e.target.value)} placeholder="alert topic" aria-label="other engine's topic" data-testid="backtest-other-topic" />
                <input value={otherIdField} onChange={(e) => setOtherIdField(e.target.value)} placeholder="id field" aria-label="other engine's id field" data-testid="backtest-other-id" />
              </>
            ) : null}
          </div>
          {oldSide ? <ComparisonView key={`${chosen.id}-${JSON.stringify(oldSide)}`} pipelineId={pipeline.id} newSide={{ kind: "backtest", backtestId: chosen.id }} oldSide={oldSide} title={`Backtest of v${chosen.versionNumber} over ${rangeText(chosen.range)}`} /> : null}
        </div>
      ) : null}
    </section>
  );
}
