"use client";
import { memo } from "react";
import type { PipelineSummary } from "../trpc/types";
import { formatTime } from "./format";

interface Props {
  pipelines: PipelineSummary[] | undefined;
  loading: boolean;
  error: string | null;
  selectedId: string | null;
  onSelect: (id: string) => void;
}

function PipelineListView({ pipelines, loading, error, selectedId, onSelect }: Props) {
  return (
    <nav className="kf-list" aria-label="Pipelines" data-testid="pipeline-list">
      <h2 className="kf-list__heading">
        Pipelines <span className="kf-list__count">{pipelines?.length ?? ""}</span>
      </h2>
      {error ? <p className="kf-list__note kf-list__note--error">{error}</p> : null}
      {loading ? <p className="kf-list__note">Loading…</p> : null}
      {pipelines?.length === 0 ? <p className="kf-list__note">No pipelines yet.</p> : null}
      <ul>
        {pipelines?.map((p) => (
          <li key={p.id}>
            <button
              type="button"
              className="kf-list__item"
              aria-current={p.id === selectedId ? "true" : undefined}
              data-testid={`pipeline-item-${p.name}`}
              onClick={() => onSelect(p.id)}
            >
              <span className="kf-list__name">{p.name}</span>
              {p.description ? <span className="kf-list__desc">{p.description}</span> : null}
              <span className="kf-list__meta">
                {p.latestVersion ? `v${p.latestVersion.number}` : "no version"} · {formatTime(p.updatedAt)}
              </span>
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}

export const PipelineList = memo(PipelineListView);
