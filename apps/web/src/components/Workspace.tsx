"use client";
// The designer's frame: the pipeline list on the left, the selected pipeline's graph in the middle,
// its document on the right.
import { useQuery } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useState } from "react";
import type { PipelineDocument } from "@keyflow/operators";
import { useTRPC } from "../trpc/react";
import type { PipelineDetail } from "../trpc/types";
import { PipelineCanvas } from "./canvas/PipelineCanvas";
import { DocumentPanel } from "./editor/DocumentPanel";
import { PipelineList } from "./PipelineList";
import { formatTime } from "./format";

/** What is on the canvas: a saved version (by number) or the draft. */
type Shown = { kind: "version"; number: number } | { kind: "draft" };

function pickDocument(pipeline: PipelineDetail, shown: Shown | null): { doc: PipelineDocument; shown: Shown } {
  const newest = pipeline.versions[0];
  if (shown?.kind === "version") {
    const version = pipeline.versions.find((v) => v.number === shown.number);
    if (version) return { doc: version.graph, shown };
  }
  if (shown?.kind === "draft" || !newest) return { doc: pipeline.draft, shown: { kind: "draft" } };
  return { doc: newest.graph, shown: { kind: "version", number: newest.number } };
}

export function Workspace({ initialPipelineId }: { initialPipelineId: string | null }) {
  const trpc = useTRPC();
  const list = useQuery(trpc.pipeline.list.queryOptions());
  const catalog = useQuery(trpc.catalog.list.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const [selectedId, setSelectedId] = useState<string | null>(initialPipelineId);
  const [shown, setShown] = useState<Shown | null>(null);

  // Nothing chosen yet: open the most recently changed pipeline.
  const firstId = list.data?.[0]?.id ?? null;
  useEffect(() => {
    if (selectedId === null && firstId !== null) setSelectedId(firstId);
  }, [selectedId, firstId]);

  const select = useCallback((id: string) => {
    setSelectedId(id);
    setShown(null);
    const url = new URL(window.location.href);
    url.searchParams.set("pipeline", id);
    window.history.replaceState(null, "", url);
  }, []);

  const detail = useQuery({ ...trpc.pipeline.get.queryOptions({ id: selectedId ?? "" }), enabled: selectedId !== null });
  const picked = useMemo(() => (detail.data ? pickDocument(detail.data, shown) : null), [detail.data, shown]);
  const canvasKey = picked ? `${detail.data?.id ?? ""}:${picked.shown.kind === "draft" ? "draft" : `v${picked.shown.number}`}` : "";

  return (
    <div className="kf-app">
      <header className="kf-topbar">
        <div className="kf-brand">
          <svg className="kf-brand__mark" viewBox="0 0 24 24" aria-hidden="true">
            <path d="M4 6h6l4 6-4 6H4l4-6z" />
            <path d="M13 6h7l-4 6 4 6h-7l4-6z" opacity="0.55" />
          </svg>
          <span className="kf-brand__name">Keyflow</span>
          <span className="kf-brand__tag">pipeline designer</span>
        </div>
        {detail.data && picked ? (
          <div className="kf-topbar__pipeline">
            <span className="kf-topbar__name" data-testid="pipeline-title">
              {detail.data.name}
            </span>
            <select
              className="kf-select"
              aria-label="Version shown"
              data-testid="version-select"
              value={picked.shown.kind === "draft" ? "draft" : String(picked.shown.number)}
              onChange={(e) => setShown(e.target.value === "draft" ? { kind: "draft" } : { kind: "version", number: Number(e.target.value) })}
            >
              {detail.data.versions.map((v) => (
                <option key={v.id} value={String(v.number)}>
                  v{v.number}
                  {v.message ? ` · ${v.message}` : ""}
                </option>
              ))}
              <option value="draft">Draft</option>
            </select>
            <VersionMeta pipeline={detail.data} shown={picked.shown} />
          </div>
        ) : null}
      </header>

      <aside className="kf-sidebar">
        <PipelineList pipelines={list.data} loading={list.isPending} error={list.error?.message ?? null} selectedId={selectedId} onSelect={select} />
      </aside>

      <main className="kf-main">
        {detail.error ? (
          <div className="kf-empty kf-empty--error">{detail.error.message}</div>
        ) : picked && catalog.data ? (
          <PipelineCanvas key={canvasKey} document={picked.doc} operators={catalog.data} />
        ) : (
          <div className="kf-empty">{selectedId === null && list.data?.length === 0 ? "No pipelines yet." : "Loading…"}</div>
        )}
      </main>

      <section className="kf-panel" aria-label="Pipeline document">
        <DocumentPanel document={picked?.doc ?? null} title={picked ? (picked.shown.kind === "draft" ? "draft" : `v${picked.shown.number}`) : ""} />
      </section>
    </div>
  );
}

function VersionMeta({ pipeline, shown }: { pipeline: PipelineDetail; shown: Shown }) {
  if (shown.kind === "draft") {
    return <span className="kf-topbar__meta">unsaved working copy · changed {formatTime(pipeline.updatedAt)}</span>;
  }
  const version = pipeline.versions.find((v) => v.number === shown.number);
  if (!version) return null;
  return (
    <span className="kf-topbar__meta" data-testid="version-meta">
      saved by {version.author} · {formatTime(version.createdAt)} · <code title={version.graphHash}>{version.graphHash.slice(0, 10)}</code>
    </span>
  );
}
