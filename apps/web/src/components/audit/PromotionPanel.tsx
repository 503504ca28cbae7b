"use client";
// Promotion to enforcement for the pipeline on screen: ask for the newest version (analysts; a
// written reason before the policy's days in shadow), approve or reject pending requests with a
// comment (approvers other than the requester) beside the shadow/enforcement comparison, and roll
// enforcement back to the previous version (approved, or an emergency with a reason). An approval
// allows one enforcing deploy; its use is shown on the request. The approver
// sees each open request's state check against the rule job's checkpoint, and chooses what the
// version that enforced becomes (shadow or stopped) on a promotion or a rollback. The server
// enforces all of it; a decision the server would refuse (one's own request or version) is shown
// disabled with the server's reason.
import { useMutation, useQueries, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../trpc/react";
import type { PipelineDetail } from "../../trpc/types";
import { ComparisonView } from "../comparison/ComparisonView";
import { ParamChangeList } from "../diff/ParamChangeList";
import { diffPipelines } from "../../diff/diff";
import { AfterEnforcingChoice, StateCheck, type AfterEnforcing } from "./PromotionControls";
import { useRunnerHealth } from "../live/RunnerHealth";
import { unreachableText } from "../../live/runner-status";
import "./audit.css";

/** The bundle's graph diff: what the version changes against the one enforcing now (or that nothing enforces yet). */
function ChangesAgainstEnforcing({ pipeline, versionId, enforcing }: { pipeline: PipelineDetail; versionId: string; enforcing: string[] }) {
  const graphOf = (id: string) => pipeline.versions.find((v) => v.id === id);
  const candidate = graphOf(versionId);
  const current = enforcing.map(graphOf).find((v) => v !== undefined);
  if (!candidate) return null;
  if (!current) return <p className="kf-muted" data-testid="promotion-diff">No version enforces yet: v{candidate.number} would be the first.</p>;
  return (
    <details className="kf-promotion__diff" data-testid="promotion-diff">
      <summary>
        Changes of v{candidate.number} against v{current.number} (enforcing)
      </summary>
      <ParamChangeList diff={diffPipelines(current.graph, candidate.graph)} />
    </details>
  );
}

export function PromotionPanel({ pipeline }: { pipeline: PipelineDetail }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const me = useQuery(trpc.users.me.queryOptions(undefined, { staleTime: 60_000 }));
  const requests = useQuery(trpc.promotion.list.queryOptions({ pipelineId: pipeline.id }));
  const refresh = () => Promise.all([queryClient.invalidateQueries({ queryKey: trpc.promotion.list.queryKey({ pipelineId: pipeline.id }) }), queryClient.invalidateQueries({ queryKey: trpc.audit.list.pathKey() })]);
  const ask = useMutation(trpc.promotion.request.mutationOptions({ onSettled: refresh }));
  const approve = useMutation(trpc.promotion.approve.mutationOptions({ onSettled: refresh }));
  const reject = useMutation(trpc.promotion.reject.mutationOptions({ onSettled: refresh }));
  const status = useQuery(trpc.promotion.status.queryOptions({ pipelineId: pipeline.id }));
  const unreachable = unreachableText(useRunnerHealth());
  const refreshAll = () => Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: trpc.promotion.status.queryKey({ pipelineId: pipeline.id }) }), queryClient.invalidateQueries({ queryKey: trpc.pipeline.get.queryKey({ id: pipeline.id }) })]);
  const enforce = useMutation(trpc.deployment.deploy.mutationOptions({ onSettled: refreshAll }));
  const rollback = useMutation(trpc.promotion.rollback.mutationOptions({ onSettled: refreshAll }));
  const [reason, setReason] = useState("");
  const [emergencyReason, setEmergencyReason] = useState("");
  const [comments, setComments] = useState<Record<string, string>>({});
  const [previousTo, setPreviousTo] = useState<AfterEnforcing>("shadow");
  const [currentTo, setCurrentTo] = useState<AfterEnforcing>("shadow");
  const newest = pipeline.versions[0];
  const isApprover = me.data?.role === "approver" || me.data?.role === "admin";
  const error = ask.error ?? approve.error ?? reject.error ?? enforce.error ?? rollback.error;
  const ageOf = (versionId: string) => status.data?.versions.find((v) => v.versionId === versionId);
  const newestAge = newest ? ageOf(newest.id) : undefined;
  const plan = status.data?.rollback.plan ?? null;
  const enforcingNow = status.data?.enforcing ?? [];
  // The bundle's state check for requests still to act on: pending, or approved and not enforcing yet.
  const open = (requests.data ?? []).filter((r) => r.status === "pending" || (r.status === "approved" && !enforcingNow.some((d) => d.versionId === r.versionId)));
  const checkedIds = [...new Set(open.map((r) => r.versionId))];
  const checks = useQueries({ queries: checkedIds.map((versionId) => trpc.promotion.compat.queryOptions({ versionId }, { staleTime: 10_000 })) });
  const checkOf = (versionId: string) => checks[checkedIds.indexOf(versionId)];
  const othersEnforcing = (versionId: string) => enforcingNow.filter((d) => d.versionId !== versionId).map((d) => `v${d.number}`);

  return (
    <section className="kf-promotion" data-testid="promotion-panel">
      <h3>Promotion to enforcement</h3>
      {newestAge ? (
        <p data-testid="promotion-days" data-early={newestAge.early ? "true" : "false"}>
          v{newestAge.number}: {newestAge.since ? `${newestAge.days.toFixed(1)} days in shadow` : "never deployed in shadow"}, policy {newestAge.policyDays} days
          {newestAge.early ? " — promoting earlier needs a written reason" : newestAge.enforcedBefore ? " (enforced before)" : ""}
        </p>
      ) : null}
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
      <ComparisonView pipelineId={pipeline.id} />
      <div className="kf-promotion__rollback" data-testid="rollback">
        <h4>Rollback</h4>
        {status.data && status.data.enforcing.length > 0 ? (
          <p data-testid="enforcing-now">
            Enforcing now: {status.data.enforcing.map((d) => `v${d.number}`).join(", ")}
            {unreachable ? <span className="kf-muted" data-testid="enforcing-unreachable">{` (${unreachable}: not confirmed running)`}</span> : null}
          </p>
        ) : (
          <p>Nothing enforces now.</p>
        )}
        {plan ? (
          <>
            <p>
              Back to v{plan.previous.number}: {status.data?.rollback.previousApproval ? `approved by ${status.data.rollback.previousApproval.decidedBy}` : "needs an approved request for its graph (ask above with its version, or use the emergency path)"}
            </p>
            <button type="button" className="kf-button kf-button--small" disabled={ask.isPending} onClick={() => ask.mutate({ versionId: plan.previous.versionId, reason: `roll back to v${plan.previous.number}` })} data-testid="rollback-request">
              Ask to return to v{plan.previous.number}
            </button>
            {isApprover ? (
              <>
                <AfterEnforcingChoice who={plan.current.map((c) => `v${c.number}`).join(", ")} value={currentTo} onChange={setCurrentTo} testId="rollback-current" />
                <button type="button" className="kf-button kf-button--small" disabled={rollback.isPending} onClick={() => rollback.mutate({ pipelineId: pipeline.id, emergency: false, reason: `approved rollback to v${plan.previous.number}`, current: currentTo })} data-testid="rollback-approved">
                  Roll back to v{plan.previous.number}
                </button>
                <div className="kf-promotion__decide">
                  <input value={emergencyReason} onChange={(e) => setEmergencyReason(e.target.value)} placeholder="why (recorded in the audit trail)" aria-label="reason for the emergency rollback" data-testid="rollback-reason" />
                  <button type="button" className="kf-button kf-button--small kf-button--danger" disabled={rollback.isPending} onClick={() => rollback.mutate({ pipelineId: pipeline.id, emergency: true, reason: emergencyReason, current: currentTo }, { onSuccess: () => setEmergencyReason("") })} data-testid="rollback-emergency">
                    Emergency rollback
                  </button>
                </div>
              </>
            ) : null}
          </>
        ) : status.data ? (
          <p>{status.data.rollback.why}</p>
        ) : null}
      </div>
      <ul className="kf-audit__list">
        {(requests.data ?? []).map((r) => {
          const check = open.some((o) => o.id === r.id) ? checkOf(r.versionId) : undefined;
          const previous = othersEnforcing(r.versionId);
          return (
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
              {check ? <StateCheck version={r.version.number} check={check.data} error={check.error ? check.error.message : null} /> : null}
              {check ? <ChangesAgainstEnforcing pipeline={pipeline} versionId={r.versionId} enforcing={enforcingNow.filter((d) => d.versionId !== r.versionId).map((d) => d.versionId)} /> : null}
              {r.usedAt ? (
                <div className="kf-muted" data-testid="promotion-used">
                  used by the enforcing deploy of deployment {r.usedByDeploymentId ?? "?"} ({new Date(r.usedAt).toLocaleString("en-GB", { hour12: false })}); another enforcing deploy needs a new approval
                </div>
              ) : null}
              {r.status === "approved" && r.usedAt === null && isApprover && !enforcingNow.some((d) => d.versionId === r.versionId) ? (
                <div className="kf-promotion__decide">
                  {previous.length > 0 ? <AfterEnforcingChoice who={previous.join(", ")} value={previousTo} onChange={setPreviousTo} testId="promotion-previous" /> : null}
                  <button type="button" className="kf-button kf-button--small" disabled={enforce.isPending} onClick={() => enforce.mutate({ versionId: r.versionId, mode: "enforcing", reason: `promotion ${r.id}`, ...(previous.length > 0 ? { previous: previousTo } : {}) })} data-testid="promotion-enforce">
                    Deploy v{r.version.number} in enforcing mode
                  </button>
                </div>
              ) : null}
              {r.status === "pending" && isApprover && r.refusal.reject === null ? (
                <div className="kf-promotion__decide">
                  <input value={comments[r.id] ?? ""} onChange={(e) => setComments({ ...comments, [r.id]: e.target.value })} placeholder="comment" aria-label="comment on the decision" data-testid="promotion-comment" />
                  <button type="button" className="kf-button kf-button--small" disabled={check?.data?.compatible === false || r.refusal.approve !== null} title={r.refusal.approve ?? undefined} onClick={() => approve.mutate({ requestId: r.id, comment: comments[r.id] ?? "" })} data-testid="promotion-approve">
                    Approve
                  </button>
                  <button type="button" className="kf-button kf-button--small kf-button--danger" onClick={() => reject.mutate({ requestId: r.id, comment: comments[r.id] ?? "" })} data-testid="promotion-reject">
                    Reject
                  </button>
                  {r.refusal.approve !== null ? (
                    <span className="kf-muted" data-testid="promotion-approve-refused">
                      {r.refusal.approve}
                    </span>
                  ) : null}
                </div>
              ) : null}
            </li>
            );
        })}
      </ul>
    </section>
  );
}
