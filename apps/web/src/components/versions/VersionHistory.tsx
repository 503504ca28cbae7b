"use client";
// The version history: every saved version, newest first, with its number, author, time and
// message; "Open" puts it on the canvas, "Diff with…" compares it with another version or the
// draft. Above the list: export the document shown, and deploy the newest version (its label
// counts the changes it ships). Saving a version is the editor's "Save version" dialog; `actions`
// can hold its button.
import type { ReactNode } from "react";
import { DeployButton } from "./DeployButton";
import { ExportButton } from "./ExportButton";
import { formatTime } from "../format";
import { sideLabel, usePipelineTools, type DiffSide } from "./tools-context";
import { useRunnerHealth } from "../live/RunnerHealth";
import { unreachableText } from "../../live/runner-status";

/** The two sides of a diff, the older first (the draft is newest). */
export function olderFirst(a: DiffSide, b: DiffSide): [DiffSide, DiffSide] {
  if (a === "draft") return [b, a];
  if (b === "draft") return [a, b];
  return a <= b ? [a, b] : [b, a];
}

function DiffWith({ version, sides, onPick }: { version: number; sides: DiffSide[]; onPick: (other: DiffSide) => void }) {
  return (
    <select
      className="kf-select kf-select--small"
      aria-label={`Diff v${version} with…`}
      data-testid={`version-diff-${version}`}
      value=""
      onChange={(e) => {
        const v = e.target.value;
        if (v !== "") onPick(v === "draft" ? "draft" : Number(v));
      }}
    >
      <option value="">Diff with…</option>
      {sides
        .filter((s) => s !== version)
        .map((s) => (
          <option key={String(s)} value={String(s)}>
            {sideLabel(s)}
          </option>
        ))}
    </select>
  );
}

export function VersionHistory({ actions }: { actions?: ReactNode }) {
  const { pipeline, shown, openVersion, openDiff, deploy } = usePipelineTools();
  const sides: DiffSide[] = [...pipeline.versions.map((v) => v.number), "draft"];
  const deployedId = deploy.deployed?.id;
  const unreachable = unreachableText(useRunnerHealth(deployedId !== undefined));
  return (
    <div className="kf-history" data-testid="version-history">
      <div className="kf-history__toolbar">
        {actions}
        <ExportButton />
        <DeployButton />
      </div>
      {pipeline.versions.length === 0 ? <p className="kf-muted kf-history__empty">No versions yet: the draft is all there is. Save one to deploy it.</p> : null}
      <ol className="kf-history__list">
        <li className={`kf-history__item${shown === "draft" ? " kf-history__item--shown" : ""}`} data-testid="version-row-draft">
          <div className="kf-history__head">
            <span className="kf-history__number">Draft</span>
            <span className="kf-muted">working copy · changed {formatTime(new Date(pipeline.updatedAt))}</span>
          </div>
          <div className="kf-history__actions">
            <button type="button" className="kf-button kf-button--small" onClick={() => openVersion("draft")} disabled={shown === "draft"} data-testid="version-open-draft">
              {shown === "draft" ? "Shown" : "Open"}
            </button>
            {pipeline.versions[0] ? (
              <button type="button" className="kf-button kf-button--small" onClick={() => openDiff(pipeline.versions[0]?.number ?? 1, "draft")} data-testid="version-diff-draft" title="What the draft changes against the newest version">
                Compare with v{pipeline.versions[0].number}
              </button>
            ) : null}
          </div>
        </li>
        {pipeline.versions.map((v) => {
          const previous = pipeline.versions.find((p) => p.number < v.number)?.number;
          return (
            <li key={v.id} className={`kf-history__item${shown === v.number ? " kf-history__item--shown" : ""}`} data-testid={`version-row-${v.number}`}>
              <div className="kf-history__head">
                <span className="kf-history__number">v{v.number}</span>
                {v.id === deployedId ? (
                  <span className="kf-tag kf-tag--live" title={unreachable ? `Deployed; ${unreachable}, so not confirmed running` : "The version running now"} data-testid={`version-deployed-${v.number}`}>
                    {unreachable ? `deployed · ${unreachable}` : "deployed"}
                  </span>
                ) : null}
                <span className="kf-muted" title={new Date(v.createdAt).toISOString()}>
                  {v.author} · {formatTime(new Date(v.createdAt))}
                </span>
              </div>
              <p className="kf-history__message">{v.message || <span className="kf-muted">(no message)</span>}</p>
              <div className="kf-history__actions">
                <button type="button" className="kf-button kf-button--small" onClick={() => openVersion(v.number)} disabled={shown === v.number} data-testid={`version-open-${v.number}`}>
                  {shown === v.number ? "Shown" : "Open"}
                </button>
                {previous !== undefined ? (
                  <button type="button" className="kf-button kf-button--small" onClick={() => openDiff(previous, v.number)} data-testid={`version-changes-${v.number}`}>
                    Changes
                  </button>
                ) : null}
                <DiffWith version={v.number} sides={sides} onPick={(other) => openDiff(...olderFirst(v.number, other))} />
              </div>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
