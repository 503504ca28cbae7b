"use client";
// Deploy the newest version. The label says what it ships against the version running now:
// `Deploy (3 changes)`; "Changes" opens the diff of the two.
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useMemo } from "react";
import { validatePipeline } from "@keyflow/operators";
import { useTRPC } from "../../trpc/react";
import { usePipelineTools } from "./tools-context";

/** The deploy button's label and state for the pipeline on screen (for a Workspace that draws its own button). */
export function useDeployButton() {
  const { pipeline, deploy } = usePipelineTools();
  const newest = pipeline.versions[0];
  const errors = useMemo(() => (newest ? validatePipeline(newest.graph).issues.filter((i) => i.severity === "error").length : 0), [newest]);
  const disabledReason = !newest
    ? "Save a version first: only saved versions are deployed"
    : errors > 0
      ? `v${newest.number} has ${errors} error${errors === 1 ? "" : "s"}; a pipeline with errors cannot be deployed`
      : deploy.deployed?.id === newest.id
        ? `v${newest.number} is the version running`
        : undefined;
  return { label: deploy.label, changes: deploy.changes, plan: deploy, version: newest, disabledReason };
}

export function DeployButton() {
  const { pipeline, deploy, openDiff } = usePipelineTools();
  const { label, version, disabledReason } = useDeployButton();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const mutation = useMutation(
    trpc.deployment.deploy.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey({ id: pipeline.id }) }),
    }),
  );
  return (
    <span className="kf-deploy">
      {deploy.deployed && version && deploy.changes > 0 ? (
        <button type="button" className="kf-button kf-button--small" onClick={() => openDiff(deploy.deployed?.number ?? 1, version.number)} data-testid="deploy-changes" title="What this deploy ships">
          v{deploy.deployed.number} → v{version.number}
        </button>
      ) : null}
      <button
        type="button"
        className="kf-button kf-button--primary kf-button--small"
        disabled={disabledReason !== undefined || mutation.isPending}
        title={disabledReason ?? `Deploy v${version?.number ?? "?"}`}
        data-testid="deploy-button"
        onClick={() => version && mutation.mutate({ versionId: version.id })}
      >
        {mutation.isPending ? "Deploying…" : label}
      </button>
      {mutation.error ? (
        <span className="kf-text-error kf-deploy__error" role="alert" title={mutation.error.message} data-testid="deploy-error">
          deploy failed
        </span>
      ) : null}
    </span>
  );
}
