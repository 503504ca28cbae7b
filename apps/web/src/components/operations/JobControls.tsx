"use client";
// Job controls of a running deployment: a savepoint, a restore (from a kept checkpoint or a
// savepoint folder) and a change of parallelism through a savepoint. The sequences run on the
// server; JobControlProgress shows their steps from deployment.controls, which survives the
// deployment being replaced (a restore unmounts the panel of the deployment it was started on).
// What the caller may not do (the server's role matrix) is disabled with the reason shown.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import { useJobActions } from "./job-actions";

function time(at: number): string {
  return new Date(at).toLocaleTimeString("en-GB", { hour12: false });
}

/** Whether a control of this pipeline is running on the server (any browser may have started it). */
function useControls(pipelineId: string) {
  const trpc = useTRPC();
  return useQuery({ ...trpc.deployment.controls.queryOptions({ pipelineId }), refetchInterval: 1_000, staleTime: 0 });
}

export function JobControlProgress({ pipelineId }: { pipelineId: string }) {
  const controls = useControls(pipelineId);
  const run = controls.data?.[0];
  if (!run) return null;
  const title = { savepoint: "Savepoint", restore: "Restore", rescale: "Change of parallelism" }[run.kind];
  return (
    <section className="kf-ops__section" aria-label="Job control" data-testid="job-control-progress" data-run={run.id} data-kind={run.kind} data-status={run.status}>
      <header className="kf-ops__header">
        <h3>
          {title} · {run.status === "running" ? "in progress" : run.status}
        </h3>
        <span className="kf-ops__meta">started {time(run.startedAt)}</span>
      </header>
      <ol className="kf-ops__steps" data-testid="job-control-steps">
        {run.steps.map((s, i) => (
          <li key={i}>
            <span className="kf-ops__meta">{time(s.at)}</span> {s.message}
          </li>
        ))}
        {run.status === "running" ? <li className="kf-ops__meta">…</li> : null}
      </ol>
      {run.result ? (
        <p className="kf-ops__result" data-testid="job-control-result">
          {run.result}
        </p>
      ) : null}
      {run.error ? (
        <div className="kf-ops__error" data-testid="job-control-error">
          {/* The runner's issues are listed one by one below, not repeated in the sentence. */}
          <p className="kf-ops__error">{run.issues.reduce((message, issue) => message.replace(`; ${issue}`, ""), run.error)}</p>
          {run.issues.length > 0 ? (
            <ul>
              {run.issues.map((issue) => (
                <li key={issue}>{issue}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}

interface Checkpoint {
  id: number;
  triggeredAt: number;
  restorable: boolean;
}

const SAVEPOINT_PATH = "path";

export function JobControls({
  pipelineId,
  deploymentId,
  checkpoints,
  parallelism,
  maxParallelism,
}: {
  pipelineId: string;
  deploymentId: string;
  checkpoints: readonly Checkpoint[];
  parallelism: number | undefined;
  maxParallelism: number | undefined;
}) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const controls = useControls(pipelineId);
  const [source, setSource] = useState<string>("");
  const [path, setPath] = useState("");
  const [target, setTarget] = useState<string>("");
  const [anotherJob, setAnotherJob] = useState(false);
  const allowed = useJobActions(deploymentId);
  const denied = { savepoint: allowed.denied("savepoint"), restore: allowed.denied("restore"), rescale: allowed.denied("rescale") };
  const anotherJobDenied = allowed.data ? allowed.data.restoreFromAnotherJob.reason : "checking what you may do…";
  // A restore or rescale replaces the deployment: show the new one.
  const refresh = async () => {
    await queryClient.invalidateQueries({ queryKey: trpc.deployment.controls.queryKey({ pipelineId }) });
    await queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey() });
  };
  const options = { onSettled: refresh };
  const savepoint = useMutation(trpc.deployment.savepoint.mutationOptions(options));
  const restore = useMutation(trpc.deployment.restore.mutationOptions(options));
  const rescale = useMutation(trpc.deployment.rescale.mutationOptions(options));
  const busy = savepoint.isPending || restore.isPending || rescale.isPending || controls.data?.[0]?.status === "running";

  // Savepoints this pipeline's controls wrote, newest first: restore candidates next to the checkpoints.
  const savepoints = [...new Set((controls.data ?? []).flatMap((r) => (r.savepointPath ? [r.savepointPath] : [])))];
  const restorable = checkpoints.filter((c) => c.restorable);
  // Until one is picked: the newest kept checkpoint, else the newest savepoint, else a folder to type.
  const fallback = restorable[0] ? `checkpoint:${restorable[0].id}` : savepoints[0] ? `savepoint:${savepoints[0]}` : SAVEPOINT_PATH;
  // A picked checkpoint that is no longer kept falls back too.
  const offered = new Set([...restorable.map((c) => `checkpoint:${c.id}`), ...savepoints.map((p) => `savepoint:${p}`), SAVEPOINT_PATH]);
  const chosen = offered.has(source) ? source : fallback;
  const from =
    chosen.startsWith("checkpoint:") ? { checkpointId: Number(chosen.slice("checkpoint:".length)) } : chosen.startsWith("savepoint:") ? { savepointPath: chosen.slice("savepoint:".length) } : chosen === SAVEPOINT_PATH && path.trim() ? { savepointPath: path.trim(), ...(anotherJob ? { anotherJob: true } : {}) } : null;
  const wanted = Number(target || parallelism || 1);
  const wantedOk = Number.isInteger(wanted) && wanted >= 1 && (maxParallelism === undefined || wanted <= maxParallelism);
  const error = savepoint.error ?? restore.error ?? rescale.error;

  return (
    <div className="kf-ops__jobcontrols" data-testid="job-controls">
      <div className="kf-ops__controls">
        <button type="button" className="kf-button kf-button--small" data-testid="job-savepoint" disabled={busy || denied.savepoint !== null} title={denied.savepoint ?? undefined} onClick={() => savepoint.mutate({ deploymentId })}>
          {savepoint.isPending ? "Taking a savepoint…" : "Savepoint"}
        </button>
      </div>
      <div className="kf-ops__controls">
        <label className="kf-ops__meta">
          Restore from{" "}
          <select data-testid="restore-source" value={chosen} disabled={busy} onChange={(e) => setSource(e.target.value)}>
            {restorable.map((c) => (
              <option key={c.id} value={`checkpoint:${c.id}`}>
                checkpoint {c.id} · {time(c.triggeredAt)}
              </option>
            ))}
            {savepoints.map((p) => (
              <option key={p} value={`savepoint:${p}`}>
                savepoint {p.split("/").at(-1)}
              </option>
            ))}
            <option value={SAVEPOINT_PATH}>a savepoint folder…</option>
          </select>
        </label>
        {chosen === SAVEPOINT_PATH ? (
          <>
            <input className="kf-input" data-testid="restore-path" placeholder="/path/to/savepoint-…" value={path} disabled={busy} onChange={(e) => setPath(e.target.value)} aria-label="Savepoint folder on the runner" />
            {/* Only the job's own savepoints, unless an approver picks another job's explicitly. */}
            <label className="kf-ops__meta" title={anotherJobDenied ?? "a savepoint of another job: recorded on the audit trail as your explicit choice"}>
              <input type="checkbox" data-testid="restore-another-job" checked={anotherJob} disabled={busy || anotherJobDenied !== null} onChange={(e) => setAnotherJob(e.target.checked)} /> another job's savepoint
            </label>
          </>
        ) : null}
        <button
          type="button"
          className="kf-button kf-button--small"
          data-testid="job-restore"
          disabled={busy || from === null || denied.restore !== null}
          title={denied.restore ?? undefined}
          onClick={() => {
            if (from && window.confirm("Restore? The job stops with a savepoint, then runs again from the chosen state (records after it are processed again).")) restore.mutate({ deploymentId, from });
          }}
        >
          {restore.isPending ? "Restoring…" : "Restore"}
        </button>
      </div>
      <div className="kf-ops__controls">
        <label className="kf-ops__meta">
          Parallelism{" "}
          <input
            type="number"
            className="kf-input kf-ops__number"
            data-testid="rescale-parallelism"
            min={1}
            max={maxParallelism}
            value={target || (parallelism ?? "")}
            disabled={busy}
            onChange={(e) => setTarget(e.target.value)}
          />
        </label>
        <span className="kf-ops__meta" data-testid="job-parallelism">
          now {parallelism ?? "?"}
          {maxParallelism !== undefined ? ` (max ${maxParallelism})` : ""}
        </span>
        <button
          type="button"
          className="kf-button kf-button--small"
          data-testid="job-rescale"
          disabled={busy || !wantedOk || wanted === parallelism || denied.rescale !== null}
          title={denied.rescale ?? undefined}
          onClick={() => {
            if (window.confirm(`Change parallelism to ${wanted}? The job stops with a savepoint and runs again from it with ${wanted} subtasks per keyed operator.`)) rescale.mutate({ deploymentId, parallelism: wanted });
          }}
        >
          {rescale.isPending ? "Changing parallelism…" : "Change parallelism"}
        </button>
      </div>
      {[denied.savepoint, denied.restore, denied.rescale].some((d) => d !== null && allowed.data) ? (
        <p className="kf-ops__meta" data-testid="job-controls-denied">
          {[...new Set([denied.savepoint, denied.restore, denied.rescale].filter((d): d is string => d !== null))].join(" · ")}
        </p>
      ) : null}
      {error ? (
        <p className="kf-ops__error" data-testid="job-control-call-error">
          {error.message}
        </p>
      ) : null}
    </div>
  );
}
