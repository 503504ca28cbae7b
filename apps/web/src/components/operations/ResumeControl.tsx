"use client";
// One click to resume the pipeline's newest stopped deployment from its last checkpoint (the one its
// stop took), or from a savepoint folder typed in; the server checks the role (an approver for one
// that may enforce) and the state's compatibility, and audits it. The button a role may not use is
// disabled with the reason.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import type { PipelineDetail } from "../../trpc/types";

type Deployment = PipelineDetail["deployments"][number];

/** The deployment a resume would start again: the newest stopped or failed one of the rule (not a test run), when nothing of it should run. */
export function resumableDeployment(pipeline: PipelineDetail): Deployment | undefined {
  if (pipeline.deployments.some((d) => d.desired === "running" && d.mode !== "test")) return undefined;
  return pipeline.deployments.find((d) => d.mode !== "test" && d.runnerJobId !== null && (d.status === "stopped" || d.status === "failed"));
}

export function ResumeControl({ pipeline }: { pipeline: PipelineDetail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.users.me.queryOptions(undefined, { staleTime: 60_000 }));
  const [savepointPath, setSavepointPath] = useState("");
  const resume = useMutation(trpc.deployment.resume.mutationOptions({ onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey() }) }));
  const target = resumableDeployment(pipeline);
  if (!target) return null;
  const version = pipeline.versions.find((v) => v.id === target.versionId)?.number;
  const needsApprover = target.mode !== "shadow";
  const mayResume = !needsApprover || me.data?.role === "approver" || me.data?.role === "admin";
  const path = savepointPath.trim();
  return (
    <section className="kf-ops__section" aria-label="Resume" data-testid="resume-control">
      <p className="kf-ops__meta">
        v{version ?? "?"} ({target.mode}) {target.status}
        {target.stoppedAt ? ` at ${new Date(target.stoppedAt).toLocaleString("en-GB", { hour12: false })}` : ""}
        {target.failureReason ? `: ${target.failureReason}` : ""}
      </p>
      <div className="kf-ops__controls">
        <input className="kf-input kf-input--small" placeholder="savepoint folder (optional)" value={savepointPath} onChange={(e) => setSavepointPath(e.target.value)} data-testid="resume-savepoint" aria-label="Savepoint folder to resume from" />
        <button
          type="button"
          className="kf-button kf-button--small"
          data-testid="job-resume"
          disabled={!mayResume || resume.isPending}
          title={mayResume ? "Start it again with its state: the newest checkpoint, or the savepoint folder given" : `Resuming a deployment in ${target.mode} mode needs the approver role`}
          onClick={() => resume.mutate({ deploymentId: target.id, ...(path ? { savepointPath: path } : {}) })}
        >
          {resume.isPending ? "Resuming…" : path ? "Resume from the savepoint" : "Resume from its last checkpoint"}
        </button>
      </div>
      {resume.error ? <p className="kf-ops__error" role="alert">{resume.error.message}</p> : null}
      {resume.data ? <p className="kf-ops__result" data-testid="resume-result">Resumed from {resume.data.from}.</p> : null}
    </section>
  );
}
