"use client";
// Promotion to enforcement for the pipeline on screen: ask for the newest version (analysts), and
// approve or reject pending requests with a comment (approvers other than the requester). The
// server enforces all of it; the buttons only avoid offering what would be refused.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import type { PipelineDetail } from "../../trpc/types";
import "./audit.css";

export function PromotionPanel({ pipeline }: { pipeline: PipelineDetail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.users.me.queryOptions(undefined, { staleTime: 60_000 }));
  const requests = useQuery(trpc.promotion.list.queryOptions({ pipelineId: pipeline.id }));
  const refresh = () => Promise.all([queryClient.invalidateQueries({ queryKey: trpc.promotion.list.queryKey({ pipelineId: pipeline.id }) }), queryClient.invalidateQueries({ queryKey: trpc.audit.list.pathKey() })]);
  const ask = useMutation(trpc.promotion.request.mutationOptions({ onSettled: refresh }));
  const approve = useMutation(trpc.promotion.approve.mutationOptions({ onSettled: refresh }));
  const reject = useMutation(trpc.promotion.reject.mutationOptions({ onSettled: refresh }));
  const enforce = useMutation(trpc.deployment.deploy.mutationOptions({ onSettled: () => Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey({ id: pipeline.id }) })]) }));
  const [reason, setReason] = useState("");
  const [comments, setComments] = useState<Record<string, string>>({});
  const newest = pipeline.versions[0];
  const isApprover = me.data?.role === "approver" || me.data?.role === "admin";
  const error = ask.error ?? approve.error ?? reject.error ?? enforce.error;

  return (
    <section className="kf-promotion" data-testid="promotion-panel">
      <h3>Promotion to enforcement</h3>
      {newest ? (
        <div className="kf-promotion__ask">
          <input value={reason} onChange={(e) => setReason(e.target.value)} placeholder="why (e.g. 14 days in shadow, precision …)" aria-label="reason for the promotion" data-testid="promotion-reason" />
          <button type="button" className="kf-button kf-button--small" disabled={ask.isPending} onClick={() => ask.mutate({ versionId: newest.id, reason }, { onSuccess: () => setReason("") })} data-testid="promotion-request">
            Ask to promote v{newest.number}
          </button>
        </div>
      ) : (
        <p>Save a version first: only versions are promoted.</p>
      )}
      {error ? <p className="kf-auth__error" role="alert">{error.message}</p> : null}
      <ul className="kf-audit__list">
        {(requests.data ?? []).map((r) => (
          <li key={r.id} data-testid={`promotion-${r.id}`} data-status={r.status}>
            <div>
              <strong>v{r.version.number}</strong> · <span data-testid="promotion-status">{r.status}</span> · asked by {r.requestedBy}
              {r.reason ? ` (“${r.reason}”)` : ""}
            </div>
            {r.decidedBy ? (
              <div>
                {r.status} by {r.decidedBy}
                {r.comment ? `: “${r.comment}”` : ""}
              </div>
            ) : null}
            {r.status === "approved" && isApprover ? (
              <div className="kf-promotion__decide">
                <button type="button" className="kf-button kf-button--small" disabled={enforce.isPending} onClick={() => enforce.mutate({ versionId: r.versionId, mode: "enforcing", reason: `promotion ${r.id}` })} data-testid="promotion-enforce">
                  Deploy v{r.version.number} in enforcing mode
                </button>
              </div>
            ) : null}
            {r.status === "pending" && isApprover && me.data?.email !== r.requestedBy ? (
              <div className="kf-promotion__decide">
                <input value={comments[r.id] ?? ""} onChange={(e) => setComments({ ...comments, [r.id]: e.target.value })} placeholder="comment" aria-label="comment on the decision" data-testid="promotion-comment" />
                <button type="button" className="kf-button kf-button--small" onClick={() => approve.mutate({ requestId: r.id, comment: comments[r.id] ?? "" })} data-testid="promotion-approve">
                  Approve
                </button>
                <button type="button" className="kf-button kf-button--small kf-button--danger" onClick={() => reject.mutate({ requestId: r.id, comment: comments[r.id] ?? "" })} data-testid="promotion-reject">
                  Reject
                </button>
              </div>
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}
