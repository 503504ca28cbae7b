"use client";
// The pipeline tools as one panel: the version history and the dry run, as tabs (for a Workspace
// that does not put them among its own side-panel tabs).
import type { ReactNode } from "react";
import { DryRunPanel } from "../dryrun/DryRunPanel";
import { usePipelineTools, type PanelTab } from "./tools-context";
import { VersionHistory } from "./VersionHistory";

const TABS: { id: PanelTab; label: string }[] = [
  { id: "history", label: "History" },
  { id: "dryrun", label: "Dry run" },
];

export function PipelineSidePanel({ historyActions }: { historyActions?: ReactNode }) {
  const { tab, setTab, pipeline, dryRun } = usePipelineTools();
  return (
    <div className="kf-tools" data-testid="pipeline-tools">
      <div className="kf-tools__tabs" role="tablist" aria-label="Pipeline tools">
        {TABS.map((t) => (
          <button
            key={t.id}
            type="button"
            role="tab"
            aria-selected={tab === t.id}
            className={`kf-tools__tab${tab === t.id ? " kf-tools__tab--active" : ""}`}
            onClick={() => setTab(t.id)}
            data-testid={`tools-tab-${t.id}`}
          >
            {t.label}
            {t.id === "history" ? <span className="kf-tools__count">{pipeline.versions.length}</span> : null}
            {t.id === "dryrun" && dryRun.status === "done" && dryRun.result ? <span className="kf-tools__count">{dryRun.result.alerts.count}</span> : null}
          </button>
        ))}
      </div>
      <div className="kf-tools__body" role="tabpanel" hidden={tab !== "history"}>
        <VersionHistory {...(historyActions ? { actions: historyActions } : {})} />
      </div>
      <div className="kf-tools__body" role="tabpanel" hidden={tab !== "dryrun"}>
        <DryRunPanel />
      </div>
    </div>
  );
}
