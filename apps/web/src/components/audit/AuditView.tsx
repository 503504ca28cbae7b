"use client";
// The audit trail, filterable by actor, action, pipeline and time range, newest first; the same
// filter exports as CSV or JSON (GET /api/audit/export streams every matching row).
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { useTRPC } from "../../trpc/react";
import "../auth/auth.css";
import "./audit.css";

interface Filter {
  actor: string;
  action: string;
  pipelineId: string;
  /** datetime-local values (the browser's time zone). */
  from: string;
  to: string;
}

function describe(details: unknown): string {
  if (typeof details !== "object" || details === null) return "";
  const text = JSON.stringify(details);
  return text === "{}" ? "" : text.length > 400 ? `${text.slice(0, 400)}…` : text;
}

/** `fixedPipelineId`: the view inside a pipeline's side panel, always filtered to it. */
export function AuditView({ fixedPipelineId, compact = false }: { fixedPipelineId?: string; compact?: boolean }) {
  const trpc = useTRPC();
  const [filter, setFilter] = useState<Filter>({ actor: "", action: "", pipelineId: fixedPipelineId ?? "", from: "", to: "" });
  const actions = useQuery(trpc.audit.actions.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const pipelines = useQuery({ ...trpc.pipeline.list.queryOptions(), enabled: fixedPipelineId === undefined });
  const pipelineId = fixedPipelineId ?? filter.pipelineId;

  const input = useMemo(() => {
    const from = filter.from ? new Date(filter.from) : undefined;
    const to = filter.to ? new Date(filter.to) : undefined;
    const action = actions.data?.find((a) => a === filter.action);
    return {
      ...(filter.actor.trim() ? { actor: filter.actor.trim() } : {}),
      ...(action ? { action } : {}),
      ...(pipelineId ? { pipelineId } : {}),
      ...(from && !Number.isNaN(from.getTime()) ? { from } : {}),
      ...(to && !Number.isNaN(to.getTime()) ? { to } : {}),
    };
  }, [filter, pipelineId, actions.data]);

  const events = useInfiniteQuery(
    trpc.audit.list.infiniteQueryOptions({ ...input, limit: compact ? 50 : 100 }, { getNextPageParam: (page) => page.nextCursor ?? undefined, staleTime: 0, refetchOnMount: "always" }),
  );

  const exportQuery = useMemo(() => {
    const params = new URLSearchParams();
    if (input.actor) params.set("actor", input.actor);
    if (input.action) params.set("action", input.action);
    if (input.pipelineId) params.set("pipelineId", input.pipelineId);
    if (input.from) params.set("from", input.from.toISOString());
    if (input.to) params.set("to", input.to.toISOString());
    return params.toString();
  }, [input]);

  const rows = events.data?.pages.flatMap((page) => page.events) ?? [];
  const set = (patch: Partial<Filter>) => setFilter((f) => ({ ...f, ...patch }));

  return (
    <div className={compact ? "kf-audit kf-audit--compact" : "kf-audit"} data-testid="audit-view">
      <div className="kf-audit__filters">
        <label className="kf-form-field">
          Actor
          <input value={filter.actor} onChange={(e) => set({ actor: e.target.value })} placeholder="email" data-testid="audit-filter-actor" />
        </label>
        <label className="kf-form-field">
          Action
          <select value={filter.action} onChange={(e) => set({ action: e.target.value })} data-testid="audit-filter-action">
            <option value="">any</option>
            {(actions.data ?? []).map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        {fixedPipelineId === undefined ? (
          <label className="kf-form-field">
            Pipeline
            <select value={filter.pipelineId} onChange={(e) => set({ pipelineId: e.target.value })} data-testid="audit-filter-pipeline">
              <option value="">any</option>
              {(pipelines.data ?? []).map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        {compact ? null : (
          <>
            <label className="kf-form-field">
              From
              <input type="datetime-local" value={filter.from} onChange={(e) => set({ from: e.target.value })} data-testid="audit-filter-from" />
            </label>
            <label className="kf-form-field">
              To
              <input type="datetime-local" value={filter.to} onChange={(e) => set({ to: e.target.value })} data-testid="audit-filter-to" />
            </label>
          </>
        )}
        <div className="kf-audit__export">
          <a href={`/api/audit/export?format=csv&${exportQuery}`} download data-testid="audit-export-csv">
            Export CSV
          </a>
          <a href={`/api/audit/export?format=json&${exportQuery}`} download data-testid="audit-export-json">
            Export JSON
          </a>
        </div>
      </div>
      {events.error ? <p className="kf-auth__error">{events.error.message}</p> : null}
      {compact ? (
        <ul className="kf-audit__list" data-testid="audit-table">
          {rows.map((event) => (
            <li key={event.id} data-testid={`audit-row-${event.id}`} data-action={event.action}>
              <div>
                <strong>{event.action}</strong> · {event.actor} · <span title={new Date(event.at).toISOString()}>{new Date(event.at).toLocaleString()}</span>
              </div>
              {event.reason ? <div>why: {event.reason}</div> : null}
              <div className="kf-audit__details">{describe(event.details)}</div>
            </li>
          ))}
          {rows.length === 0 && !events.isPending ? <li>No events match.</li> : null}
        </ul>
      ) : (
        <table className="kf-table" data-testid="audit-table">
          <thead>
            <tr>
              <th>When</th>
              <th>Who</th>
              <th>Action</th>
              <th>Subject</th>
              <th>What</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((event) => (
              <tr key={event.id} data-testid={`audit-row-${event.id}`} data-action={event.action}>
                <td title={new Date(event.at).toISOString()}>{new Date(event.at).toLocaleString()}</td>
                <td>{event.actor}</td>
                <td>{event.action}</td>
                <td>
                  {event.subjectType} <span className="kf-audit__hash">{event.subjectId}</span>
                </td>
                <td className="kf-audit__details">{describe(event.details)}</td>
                <td>{event.reason ?? ""}</td>
              </tr>
            ))}
            {rows.length === 0 && !events.isPending ? (
              <tr>
                <td colSpan={6}>No events match.</td>
              </tr>
            ) : null}
          </tbody>
        </table>
      )}
      {events.hasNextPage ? (
        <button type="button" className="kf-button kf-button--small" onClick={() => void events.fetchNextPage()} disabled={events.isFetchingNextPage}>
          Older events
        </button>
      ) : null}
    </div>
  );
}
