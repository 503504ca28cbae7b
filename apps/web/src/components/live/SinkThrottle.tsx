"use client";
// The throttle of a sink of the running deployment (an operations and debugging control): caps the
// records per second the runner lets into the sink, to rehearse what backpressure looks like
// upstream, and lifts it. The cap in force is what the runner reports on the live stream. On a job
// that writes an enforcement output only approvers may set it (the server's role matrix): the
// buttons are disabled with its reason.
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import { useJobActions } from "../operations/job-actions";

export function SinkThrottle({ deploymentId, nodeId, current }: { deploymentId: string; nodeId: string; current: number | null }) {
  const trpc = useTRPC();
  const [draft, setDraft] = useState("10");
  const throttle = useMutation(trpc.deployment.throttle.mutationOptions());
  const denied = useJobActions(deploymentId).denied("throttle");
  const rate = Number(draft);
  const valid = draft.trim() !== "" && Number.isFinite(rate) && rate >= 0.1;
  return (
    <div className="kf-live__throttle" data-testid={`throttle-${nodeId}`} data-throttle={current ?? "none"}>
      <span className="kf-live__throttle-state" data-testid={`throttle-${nodeId}-state`} title="A records-per-second cap on this sink, set on the runner (operations and debugging)">
        {current === null ? "no throttle" : `throttled to ${current}/s`}
      </span>
      <span className="kf-live__throttle-controls">
        <input
          type="number"
          min={0.1}
          step="any"
          aria-label={`records per second for ${nodeId}`}
          data-testid={`throttle-${nodeId}-input`}
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => e.stopPropagation()}
        />
        <button
          type="button"
          className="kf-button kf-button--small"
          data-testid={`throttle-${nodeId}-set`}
          disabled={!valid || throttle.isPending || denied !== null}
          title={denied ?? undefined}
          onClick={() => throttle.mutate({ deploymentId, nodeId, recordsPerSecond: rate })}
        >
          Throttle
        </button>
        <button
          type="button"
          className="kf-button kf-button--small"
          data-testid={`throttle-${nodeId}-lift`}
          disabled={current === null || throttle.isPending || denied !== null}
          title={denied ?? undefined}
          onClick={() => throttle.mutate({ deploymentId, nodeId, recordsPerSecond: null })}
        >
          Lift
        </button>
      </span>
      {denied !== null ? (
        <span className="kf-live__throttle-denied" data-testid={`throttle-${nodeId}-denied`}>
          {denied}
        </span>
      ) : null}
      {throttle.error ? <span className="kf-live__bad">{throttle.error.message}</span> : null}
    </div>
  );
}
