"use client";
// "Diff with…": any two documents of the pipeline (versions or the draft) side by side as one
// graph, with the list of changes. Opened from the version history; Escape closes it.
import { useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { diffPipelines } from "../../diff/diff";
import { useTRPC } from "../../trpc/react";
import { documentOf, sideLabel, usePipelineTools, type DiffSide } from "../versions/tools-context";
import { DiffView } from "./DiffView";
import { ParamChangeList } from "./ParamChangeList";

function SideSelect({ value, onChange, sides, label, testId }: { value: DiffSide; onChange: (s: DiffSide) => void; sides: DiffSide[]; label: string; testId: string }) {
  return (
    <select className="kf-select" aria-label={label} data-testid={testId} value={String(value)} onChange={(e) => onChange(e.target.value === "draft" ? "draft" : Number(e.target.value))}>
      {sides.map((s) => (
        <option key={String(s)} value={String(s)}>
          {sideLabel(s)}
        </option>
      ))}
    </select>
  );
}

export function DiffDialog() {
  const { pipeline, diff, openDiff, closeDiff } = usePipelineTools();
  const trpc = useTRPC();
  const catalog = useQuery(trpc.catalog.list.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const [focus, setFocus] = useState<string | undefined>();
  const sides = useMemo<DiffSide[]>(() => [...pipeline.versions.map((v) => v.number), "draft"], [pipeline.versions]);

  useEffect(() => {
    if (!diff) return;
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && closeDiff();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [diff, closeDiff]);

  const before = diff ? documentOf(pipeline, diff.from) : undefined;
  const after = diff ? documentOf(pipeline, diff.to) : undefined;
  const changes = useMemo(() => (before && after ? diffPipelines(before, after) : undefined), [before, after]);
  if (!diff) return null;

  return (
    <div className="kf-dialog-backdrop" onMouseDown={(e) => e.target === e.currentTarget && closeDiff()}>
      <div className="kf-dialog kf-dialog--wide" role="dialog" aria-modal="true" aria-label="Compare versions" data-testid="diff-dialog">
        <header className="kf-dialog__header">
          <h3>Compare</h3>
          <SideSelect value={diff.from} onChange={(s) => openDiff(s, diff.to)} sides={sides} label="Older document" testId="diff-from" />
          <span aria-hidden="true">→</span>
          <SideSelect value={diff.to} onChange={(s) => openDiff(diff.from, s)} sides={sides} label="Newer document" testId="diff-to" />
          <span className="kf-diff-legend">
            <span className="kf-dot kf-dot--added" /> added <span className="kf-dot kf-dot--changed" /> changed <span className="kf-dot kf-dot--removed" /> removed
          </span>
          <button type="button" className="kf-button kf-dialog__close" onClick={closeDiff} data-testid="diff-close" aria-label="Close">
            ✕
          </button>
        </header>
        <div className="kf-dialog__body kf-diffdialog">
          {!before || !after ? (
            <div className="kf-empty">That version does not exist.</div>
          ) : catalog.data && changes ? (
            <>
              <div className="kf-diffdialog__graph">
                <DiffView before={before} after={after} operators={catalog.data} {...(focus ? { focusNodeId: focus } : {})} />
              </div>
              <aside className="kf-diffdialog__list">
                <ParamChangeList diff={changes} onShowNode={setFocus} />
              </aside>
            </>
          ) : (
            <div className="kf-empty">Loading…</div>
          )}
        </div>
      </div>
    </div>
  );
}
