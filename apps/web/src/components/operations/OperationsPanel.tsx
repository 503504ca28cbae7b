"use client";
// The side panel's "Operations" tab for a running deployment: the job's status, its checkpoints
// (history from the runner with a chart of duration and size, the one in flight with each task's
// acknowledgement, aborted ones with their reason, a warning past 80 % of the pipeline's timeout),
// job controls (stop, savepoint, restore, change of parallelism, with their steps and result), and
// the Sources, Skew and node drill-down panels. Stopping the enforcing version asks which version
// enforces instead, or for a reason to let enforcement stop; the result line is the server's.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { formatBytes, formatDuration } from "../../live/format";
import { useTRPC } from "../../trpc/react";
import type { PipelineDetail } from "../../trpc/types";
import { useLive } from "../live/LiveContext";
import { useRunnerHealth } from "../live/RunnerHealth";
import { shownJobStatus } from "../../live/runner-status";
import { checkpointNearTimeout, SLOW_CHECKPOINT_SHARE } from "../../live/operations";
import { CheckpointChart } from "./CheckpointChart";
import { JobControlProgress, JobControls } from "./JobControls";
import { useJobActions } from "./job-actions";
import { NodeDrillDown } from "./NodeDrillDown";
import { ResumeControl } from "./ResumeControl";
import { SkewPanel } from "./SkewPanel";
import { SourcesPanel } from "./SourcesPanel";
import "./operations.css";

type Deployment = PipelineDetail["deployments"][number];

/** The deployment the canvas shows live: the newest running one the runner accepted (a backtest, mode "test", is not the rule's live job). */
export function runningDeployment(pipeline: PipelineDetail): Deployment | undefined {
  return pipeline.deployments.find((d) => d.status === "running" && d.runnerJobId !== null && d.mode !== "test");
}

function time(at: number): string {
  return new Date(at).toLocaleTimeString("en-GB", { hour12: false });
}

/** `stopResult` lives with the caller: stopping a deployment unmounts the live canvas around this panel. */
export function OperationsPanel({ pipeline, stopResult: stopped, onStopped: setStopped }: { pipeline: PipelineDetail; stopResult: string | null; onStopped: (message: string) => void }) {
  const deployment = runningDeployment(pipeline);
  const versionNumber = deployment ? pipeline.versions.find((v) => v.id === deployment.versionId)?.number : undefined;
  return (
    <div className="kf-ops" data-testid="operations-panel">
      {stopped ? (
        <p className="kf-ops__result" data-testid="stop-result">
          {stopped}
        </p>
      ) : null}
      <JobControlProgress pipelineId={pipeline.id} />
      {deployment ? (
        <DeploymentOperations key={deployment.id} pipelineId={pipeline.id} deployment={deployment} versionNumber={versionNumber} onStopped={setStopped} />
      ) : (
        <>
          <p className="kf-ops__empty" data-testid="operations-empty">
            No running deployment of {pipeline.name}. Deploy a version from the History tab to see its checkpoints here.
          </p>
          <ResumeControl pipeline={pipeline} />
        </>
      )}
    </div>
  );
}

function DeploymentOperations({ pipelineId, deployment, versionNumber, onStopped }: { pipelineId: string; deployment: Deployment; versionNumber: number | undefined; onStopped: (message: string) => void }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const live = useLive();
  const checkpoints = useQuery({ ...trpc.deployment.checkpoints.queryOptions({ deploymentId: deployment.id }), refetchInterval: 2_000, retry: false, staleTime: 0 });
  const stop = useMutation(
    trpc.deployment.stop.mutationOptions({
      onSuccess: async (result) => {
        onStopped(result.result);
        await queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey() });
      },
    }),
  );
  const allowed = useJobActions(deployment.id);
  const stopDenied = allowed.denied("stop");
  const enforcingVersion = allowed.data?.isEnforcingVersion === true;
  // Stopping the enforcing version: which version enforces instead (one with an unused approval), or "none" with a reason.
  const promotions = useQuery({ ...trpc.promotion.list.queryOptions({ pipelineId }), enabled: enforcingVersion });
  const successors = (promotions.data ?? []).filter((r) => r.status === "approved" && r.usedAt === null && r.versionId !== deployment.versionId);
  const [instead, setInstead] = useState("none");
  const [stopReason, setStopReason] = useState("");
  const data = checkpoints.data;
  // Never the last status heard: unreachable when the runner is silent, unknown when the fetch failed.
  const jobStatus = shownJobStatus(useRunnerHealth(), data?.jobStatus, checkpoints.isError);
  const history = data?.checkpoints ?? [];
  const limit = data ? data.checkpointTimeoutMs * SLOW_CHECKPOINT_SHARE : Number.POSITIVE_INFINITY;
  const slow = history.filter((c) => data !== undefined && checkpointNearTimeout(c.durationMs, data.checkpointTimeoutMs));
  const inFlight = live?.metrics?.checkpointInProgress ?? null;
  const inFlightMs = inFlight && live?.metrics ? Math.max(0, live.metrics.at - inFlight.triggeredAt) : 0;
  const failed = live?.metrics?.failedCheckpoints ?? [];
  const liveNodes = Object.entries(live?.metrics?.nodes ?? {}).map(([id, n]) => ({ id, type: n.type }));
  const points = [...history].reverse().map((c) => ({ at: c.triggeredAt, durationMs: c.durationMs, stateBytes: c.stateBytes }));

  return (
    <>
      <section className="kf-ops__section">
        <header className="kf-ops__header">
          <h3>
            Deployment{versionNumber !== undefined ? ` of v${versionNumber}` : ""} <code title={deployment.id}>{deployment.id.slice(0, 10)}</code>
          </h3>
          <span className={`kf-ops__status kf-ops__status--${jobStatus.kind}`} data-testid="job-status" data-stale={jobStatus.stale ? "true" : "false"}>
            {jobStatus.text}
          </span>
        </header>
        <p className="kf-ops__meta">
          {deployment.mode} · since {new Date(deployment.createdAt).toLocaleString("en-GB", { hour12: false })}
          {data && data.restarts > 0 ? ` · ${data.restarts} restart${data.restarts === 1 ? "" : "s"}` : ""}
          {live?.unreachable ? " · live figures stale (greyed out) until the runner answers" : live?.status === "error" ? ` · live figures unavailable: ${live.error ?? "?"}` : ""}
        </p>
        {data?.failure ? <p className="kf-ops__warning">Last failure: {data.failure}</p> : null}
        <div className="kf-ops__controls">
          <button
            type="button"
            className="kf-button kf-button--small kf-button--danger"
            data-testid="job-stop"
            disabled={stop.isPending || stopDenied !== null}
            title={stopDenied ?? undefined}
            onClick={() => {
              if (!enforcingVersion) {
                if (window.confirm("Stop this deployment? The runner takes a final checkpoint, then stops.")) stop.mutate({ deploymentId: deployment.id });
                return;
              }
              const successor = successors.find((r) => r.versionId === instead);
              const question = successor ? `Stop v${versionNumber ?? "?"}? v${successor.version.number} enforces instead, at the same checkpoint.` : `Stop v${versionNumber ?? "?"}? Enforcement of this rule stops: no version enforces it until one is promoted.`;
              if (window.confirm(question)) stop.mutate({ deploymentId: deployment.id, reason: stopReason, ...(successor ? { enforceInstead: successor.versionId } : { enforcementStops: true }) });
            }}
          >
            {stop.isPending ? "Stopping (final checkpoint)…" : "Stop"}
          </button>
          {enforcingVersion && stopDenied === null ? (
            <>
              <label className="kf-ops__meta">
                then{" "}
                <select data-testid="stop-enforce-instead" value={instead} onChange={(e) => setInstead(e.target.value)}>
                  <option value="none">enforcement stops</option>
                  {successors.map((r) => (
                    <option key={r.id} value={r.versionId}>
                      v{r.version.number} enforces (approved by {r.decidedBy})
                    </option>
                  ))}
                </select>
              </label>
              <input className="kf-input" data-testid="stop-reason" placeholder="why (recorded in the audit trail)" value={stopReason} onChange={(e) => setStopReason(e.target.value)} aria-label="reason for stopping the enforcing version" />
            </>
          ) : null}
          {stopDenied !== null && allowed.data ? (
            <span className="kf-ops__meta" data-testid="job-stop-denied">
              {stopDenied}
            </span>
          ) : null}
          {stop.error ? <span className="kf-ops__error">{stop.error.message}</span> : null}
        </div>
        <JobControls pipelineId={pipelineId} deploymentId={deployment.id} checkpoints={history} parallelism={data?.parallelism} maxParallelism={data?.maxParallelism} />
      </section>

      <section className="kf-ops__section" aria-label="Checkpoints">
        <header className="kf-ops__header">
          <h3>Checkpoints</h3>
          {data ? (
            <span className="kf-ops__meta">
              every {formatDuration(data.checkpointIntervalMs)} · timeout {formatDuration(data.checkpointTimeoutMs)}
            </span>
          ) : null}
        </header>
        {checkpoints.error ? <p className="kf-ops__error">{checkpoints.error.message}</p> : null}
        {slow.length > 0 ? (
          <p className="kf-ops__warning" data-testid="checkpoint-slow-warning">
            {slow.length} checkpoint{slow.length === 1 ? "" : "s"} took more than 80 % of the timeout ({formatDuration(limit)}), slowest {formatDuration(Math.max(...slow.map((c) => c.durationMs)))}: a
            checkpoint about to time out fails the job's exactly-once guarantee. Reduce state (TTL, smaller windows) or raise checkpointTimeoutMs.
          </p>
        ) : null}
        {inFlight ? (
          <div data-testid="checkpoint-in-progress" data-checkpoint={inFlight.id}>
            <p className="kf-ops__meta">
              Checkpoint {inFlight.id} in progress for {formatDuration(inFlightMs)}: {inFlight.tasks.filter((t) => t.acknowledged).length} of {inFlight.tasks.length} tasks acknowledged
            </p>
            <div className="kf-ops__acks">
              {inFlight.tasks.map((t) => (
                <span key={`${t.task}-${t.subtask}-${t.node ?? ""}`} className={`kf-ops__ack kf-ops__ack--${t.acknowledged ? "done" : "pending"}`} title={t.alignmentMs !== undefined ? `alignment ${formatDuration(t.alignmentMs)}` : undefined}>
                  {t.task}
                  {t.task === "keyed" ? ` ${t.subtask}` : ""}
                  {t.node !== undefined ? ` ${t.node}` : ""} {t.acknowledged ? "✓" : "…"}
                </span>
              ))}
            </div>
            {data && checkpointNearTimeout(inFlightMs, data.checkpointTimeoutMs) ? (
              <p className="kf-ops__warning" data-testid="checkpoint-in-progress-slow">
                Checkpoint {inFlight.id} has run past 80 % of the timeout ({formatDuration(limit)}); it is aborted at {formatDuration(data.checkpointTimeoutMs)}.
              </p>
            ) : null}
          </div>
        ) : null}
        {failed.length > 0 ? (
          <table className="kf-ops__table" data-testid="checkpoint-failed">
            <thead>
              <tr>
                <th>failed</th>
                <th>triggered</th>
                <th>reason</th>
              </tr>
            </thead>
            <tbody>
              {failed.map((f) => (
                <tr key={f.id} className="kf-ops__row--slow">
                  <td>{f.id}</td>
                  <td>{time(f.triggeredAt)}</td>
                  <td>{f.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {points.length > 0 && data ? <CheckpointChart points={points} timeoutMs={data.checkpointTimeoutMs} /> : null}
        {data && history.length === 0 ? <p className="kf-ops__empty">No checkpoint completed yet (the first comes after {formatDuration(data.checkpointIntervalMs)}).</p> : null}
        {history.length > 0 ? (
          <table className="kf-ops__table" data-testid="checkpoint-table">
            <thead>
              <tr>
                <th>id</th>
                <th>status</th>
                <th>triggered</th>
                <th>duration</th>
                <th>size</th>
              </tr>
            </thead>
            <tbody>
              {history.map((c) => (
                <tr key={c.id} data-testid={`checkpoint-${c.id}`} data-status={c.status} className={c.durationMs > limit ? "kf-ops__row--slow" : undefined}>
                  <td>{c.id}</td>
                  <td>{c.status}</td>
                  <td>{time(c.triggeredAt)}</td>
                  <td>{formatDuration(c.durationMs)}</td>
                  <td>{formatBytes(c.stateBytes)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </section>
      <SourcesPanel />
      <SkewPanel />
      {liveNodes.length > 0 ? <NodeDrillDown deploymentId={deployment.id} nodes={liveNodes} /> : null}
    </>
  );
}
