// Promotion requests: "run this version in enforcement", asked by an analyst and decided by an
// approver who is not the requester. A request is tied to the version's graph hash at the time it
// was asked; saving a newer version of the pipeline voids pending and approved requests for other
// graphs, so an approval always means "this exact graph". The version's author cannot approve it
// either, and an approval is used up by the one enforcing deploy it allows (`usedAt`). Every step is audited by the caller's
// transaction (the request/decision and its audit record commit together). A version that has not
// spent the policy's days in shadow (KEYFLOW_SHADOW_POLICY_DAYS, default 14) is promoted only with a
// written reason. Rollback returns enforcement to the previous enforcing version, under the same
// approval rule or, for approvers and admins, an emergency path that records why.
import { TRPCError } from "@trpc/server";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import { hasRole, type SessionUser } from "../auth/roles";
import { notFound } from "../errors";
import { serverEnv } from "../env";
import { deployVersion } from "./deployments";
import { branchSpecs, checkRuleCompat, liveRuleJob, RULE_JOB_PREFIX, type RuleCompat } from "./rule-jobs";
import { fromJsonColumn } from "../json";
import { notifyEmergencyRollback } from "./notifications";
import { stopDeployment } from "./operations";

export const DEFAULT_SHADOW_POLICY_DAYS = 14;
/** An early promotion's or an emergency rollback's reason must say something: at least this many characters. */
export const MIN_WRITTEN_REASON = 10;
const DAY_MS = 86_400_000;

export interface ShadowAge {
  /** When the version's first shadow deployment that did not fail started; null: never in shadow. */
  since: Date | null;
  days: number;
  /** It enforced before (going back to it is a rollback, not a new rule): the policy does not apply. */
  enforcedBefore: boolean;
  policyDays: number;
  /** Promoting it now needs a written reason. */
  early: boolean;
}

export async function shadowAge(prisma: PrismaClient, versionId: string, policyDays: number, now: Date): Promise<ShadowAge> {
  const first = await prisma.deployment.findFirst({ where: { versionId, mode: "shadow", status: { not: "failed" } }, orderBy: { createdAt: "asc" }, select: { createdAt: true } });
  const enforced = await prisma.deployment.count({ where: { versionId, mode: "enforcing", status: { not: "failed" } } });
  const days = first ? Math.max(0, (now.getTime() - first.createdAt.getTime()) / DAY_MS) : 0;
  return { since: first?.createdAt ?? null, days, enforcedBefore: enforced > 0, policyDays, early: enforced === 0 && days < policyDays };
}

const select = { id: true, pipelineId: true, versionId: true, graphHash: true, status: true, requestedBy: true, reason: true, createdAt: true, decidedBy: true, decidedAt: true, comment: true, usedAt: true, usedByDeploymentId: true, version: { select: { number: true } } } as const;

export async function requestPromotion(prisma: PrismaClient, user: SessionUser, input: { versionId: string; reason: string }, policy: { policyDays: number; now: Date } = { policyDays: DEFAULT_SHADOW_POLICY_DAYS, now: new Date() }) {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: input.versionId }, select: { id: true, number: true, pipelineId: true, graphHash: true } });
  if (!version) throw notFound("version", input.versionId);
  const age = await shadowAge(prisma, version.id, policy.policyDays, policy.now);
  if (age.early && input.reason.trim().length < MIN_WRITTEN_REASON) {
    throw new TRPCError({
      code: "BAD_REQUEST",
      message: `version ${version.number} has been in shadow ${age.days.toFixed(1)} days${age.since ? "" : " (never deployed in shadow)"}, under the policy's ${policy.policyDays}: promoting it earlier needs a written reason (${MIN_WRITTEN_REASON} characters or more)`,
    });
  }
  return prisma.$transaction(async (tx) => {
    // An approval already used by its enforcing deploy is history: a new request may follow it.
    const open = await tx.promotionRequest.findFirst({ where: { versionId: version.id, OR: [{ status: "pending" }, { status: "approved", usedAt: null }] }, select: { id: true, status: true } });
    if (open) throw new TRPCError({ code: "CONFLICT", message: `version ${version.number} already has a ${open.status} promotion request (${open.id})` });
    const request = await tx.promotionRequest.create({ data: { pipelineId: version.pipelineId, versionId: version.id, graphHash: version.graphHash, requestedBy: user.email, reason: input.reason }, select });
    await appendAuditEvent(tx, { actor: user.email, action: "request", subjectType: "promotion", subjectId: request.id, details: { pipelineId: version.pipelineId, versionId: version.id, number: version.number, graphHash: version.graphHash, daysInShadow: Math.round(age.days * 100) / 100, policyDays: policy.policyDays, early: age.early }, reason: input.reason || null });
    return request;
  });
}

/**
 * Why this person may not take this decision on the request (four-eyes), or null: the requester
 * decides nothing, the version's author approves nothing. The procedure and the panel's buttons
 * read the same answer.
 */
export function decisionRefusal(user: Pick<SessionUser, "email" | "role">, request: { requestedBy: string; version: { number: number; author: string } }, decision: "approve" | "reject"): string | null {
  if (!hasRole(user.role, "approver")) return `${decision === "approve" ? "approving" : "rejecting"} needs the approver role; ${user.email} is an ${user.role}`;
  if (request.requestedBy === user.email) return `${user.email} asked for this promotion and cannot ${decision} it: another approver must decide`;
  if (decision === "approve" && request.version.author === user.email) return `${user.email} authored version ${request.version.number} and cannot approve its promotion: another approver must decide`;
  return null;
}

export async function decidePromotion(prisma: PrismaClient, user: SessionUser, input: { requestId: string; decision: "approve" | "reject"; comment: string; stateCheck?: StateCheckRecord }) {
  return prisma.$transaction(async (tx) => {
    // Locked: two approvers deciding at once get one decision, not two.
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM promotion_requests WHERE id = ${input.requestId} FOR UPDATE`;
    if (locked.length === 0) throw notFound("promotion request", input.requestId);
    const request = await tx.promotionRequest.findUniqueOrThrow({ where: { id: input.requestId }, select: { ...select, version: { select: { number: true, graphHash: true, author: true } } } });
    const refusal = decisionRefusal(user, request, input.decision);
    if (refusal) throw new TRPCError({ code: "FORBIDDEN", message: refusal });
    if (request.status !== "pending") throw new TRPCError({ code: "PRECONDITION_FAILED", message: `promotion request ${request.id} is ${request.status}, not pending` });
    // Versions are immutable, so this holds unless the row was tampered with; checked anyway, because it is what the approval means.
    if (request.version.graphHash !== request.graphHash) {
      throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${request.version.number} no longer has the graph the request was made for (${request.graphHash.slice(0, 12)}…)` });
    }
    const status = input.decision === "approve" ? "approved" : "rejected";
    const decided = await tx.promotionRequest.update({ where: { id: request.id }, data: { status, decidedBy: user.email, decidedAt: new Date(), comment: input.comment }, select });
    await appendAuditEvent(tx, {
      actor: user.email,
      action: input.decision,
      subjectType: "promotion",
      subjectId: request.id,
      details: { pipelineId: request.pipelineId, versionId: request.versionId, number: request.version.number, graphHash: request.graphHash, requestedBy: request.requestedBy, ...(input.stateCheck ? { stateCheck: input.stateCheck } : {}) },
      reason: input.comment || null,
    });
    return decided;
  });
}

/** The state check an approval was given with, as the audit records it. */
export type StateCheckRecord = {
  ruleJobId: string | null;
  checkpoint: string | null;
  compatible: boolean;
  dropped: string[];
};

/** Called after a version is saved: requests for any other graph of the pipeline are void. */
export async function voidStalePromotions(prisma: PrismaClient, actor: string, pipelineId: string, graphHash: string): Promise<number> {
  return prisma.$transaction(async (tx) => {
    // Approvals already used by their enforcing deploy stay as they are: the record of what allowed it.
    const stale = await tx.promotionRequest.findMany({ where: { pipelineId, OR: [{ status: "pending" }, { status: "approved", usedAt: null }], graphHash: { not: graphHash } }, select: { id: true, status: true, versionId: true } });
    for (const request of stale) {
      await tx.promotionRequest.update({ where: { id: request.id }, data: { status: "void" } });
      await appendAuditEvent(tx, { actor, action: "void", subjectType: "promotion", subjectId: request.id, details: { pipelineId, versionId: request.versionId, voided: true, was: request.status }, reason: "a newer version was saved: the request no longer matches the graph that would run" });
    }
    return stale.length;
  });
}

/** The pipeline's requests, newest first, each with what the caller may decide on it and why not (the panel's buttons). */
export async function listPromotions(prisma: PrismaClient, pipelineId: string, user: Pick<SessionUser, "email" | "role">) {
  const rows = await prisma.promotionRequest.findMany({ where: { pipelineId }, orderBy: { createdAt: "desc" }, select: { ...select, version: { select: { number: true, author: true } } } });
  return rows.map((r) => ({ ...r, refusal: { approve: decisionRefusal(user, r, "approve"), reject: decisionRefusal(user, r, "reject") } }));
}

/**
 * Enforcement needs an approved request for exactly this version's graph, not yet used by an
 * enforcing deploy. Returns that request; throws PRECONDITION_FAILED naming what is missing (and
 * which deployment used the last approval).
 */
export async function approvedPromotion(prisma: PrismaClient, versionId: string) {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: versionId }, select: { number: true, graphHash: true } });
  if (!version) throw notFound("version", versionId);
  const approved = await prisma.promotionRequest.findFirst({ where: { versionId, status: "approved", graphHash: version.graphHash, usedAt: null }, orderBy: { decidedAt: "desc" }, select: { id: true, requestedBy: true, decidedBy: true } });
  if (approved) return approved;
  const used = await prisma.promotionRequest.findFirst({ where: { versionId, status: "approved", graphHash: version.graphHash }, orderBy: { usedAt: "desc" }, select: { id: true, usedAt: true, usedByDeploymentId: true } });
  if (used) {
    throw new TRPCError({
      code: "PRECONDITION_FAILED",
      message: `the approval ${used.id} of version ${version.number} was used by deployment ${used.usedByDeploymentId ?? "?"} (${used.usedAt?.toISOString() ?? "?"}): an approval allows one enforcing deploy, so ask for a new one and have another approver approve it`,
    });
  }
  throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${version.number} has no approved promotion request for its graph (${version.graphHash.slice(0, 12)}…): ask for one and have another approver approve it` });
}

/**
 * An enforcing deploy of the version under its approval, which it uses up: the approval is claimed
 * first (two deploys at once cannot both use it), then the version enforces (the switch of the rule
 * job's warm shadow branch at a checkpoint boundary: ./deployments.ts), and the deployment is
 * recorded on the request. A deploy that fails hands the approval back.
 */
export async function enforceApproved(prisma: PrismaClient, runnerUrl: string, input: { versionId: string; previousMode?: "shadow" | "stopped" }) {
  const promotion = await approvedPromotion(prisma, input.versionId);
  const claimed = await prisma.promotionRequest.updateMany({ where: { id: promotion.id, status: "approved", usedAt: null }, data: { usedAt: new Date() } });
  if (claimed.count !== 1) throw new TRPCError({ code: "CONFLICT", message: `the approval ${promotion.id} was used by another enforcing deploy at the same time` });
  let deployment: Awaited<ReturnType<typeof deployVersion>>;
  try {
    deployment = await deployVersion(prisma, runnerUrl, { versionId: input.versionId, mode: "enforcing", ...(input.previousMode ? { previousMode: input.previousMode } : {}) });
  } catch (error) {
    await prisma.promotionRequest.updateMany({ where: { id: promotion.id, usedByDeploymentId: null }, data: { usedAt: null } });
    throw error;
  }
  await prisma.promotionRequest.update({ where: { id: promotion.id }, data: { usedByDeploymentId: deployment.id } });
  return { deployment, promotion };
}

/**
 * The approver's state check: would the rule job, with this version added to its live branches,
 * restore from the running job's newest checkpoint? (restore-compat on the runner, nodes named.)
 * Without a running rule job there is nothing to restore: the version would start empty.
 */
export async function promotionCompat(prisma: PrismaClient, runnerUrl: string, versionId: string): Promise<RuleCompat & { ruleJobId: string | null; note: string | null }> {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: versionId }, select: { number: true, pipelineId: true, graph: true, pipeline: { select: { name: true } } } });
  if (!version) throw notFound("version", versionId);
  const live = await liveRuleJob(prisma, runnerUrl, version.pipelineId);
  if (!live) return { ruleJobId: null, checkpoint: null, compatible: true, problems: [], dropped: [], note: "no rule job of this rule is running: the version would start with empty state" };
  const branches = branchSpecs(live).filter((b) => b.version !== version.number);
  branches.push({ version: version.number, mode: "shadow", pipeline: fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`) });
  // Stopped branches still run in the job (their state is in its checkpoints) but have no live row:
  // a deploy that restarts the job drops them (./deployments.ts), so the check drops them too.
  const dropsStopped = Object.entries(live.modes).some(([v, m]) => m === "stopped" && Number(v) !== version.number);
  const check = await checkRuleCompat(runnerUrl, live.jobId, branches, live.name, dropsStopped);
  return { ...check, ruleJobId: live.jobId, note: null };
}

// ---- Rollback ----------------------------------------------------------------------------------

export interface RollbackPlan {
  /** The running enforcing deployments that stop. */
  current: { deploymentId: string; versionId: string; number: number }[];
  /** The version enforcement returns to: the newest other version that enforced before the current one. */
  previous: { versionId: string; number: number };
}

const liveStatuses = ["pending", "running"] as const;

/** What a rollback of the pipeline would do now, or why there is nothing to roll back to. */
export async function rollbackPlan(prisma: PrismaClient, pipelineId: string): Promise<RollbackPlan> {
  const current = await prisma.deployment.findMany({
    where: { pipelineId, mode: "enforcing", status: { in: [...liveStatuses] } },
    orderBy: { createdAt: "desc" },
    select: { id: true, versionId: true, createdAt: true, version: { select: { number: true } } },
  });
  const newest = current[0];
  if (!newest) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "no version of this rule is enforcing: there is nothing to roll back" });
  const previous = await prisma.deployment.findFirst({
    where: { pipelineId, mode: "enforcing", status: { not: "failed" }, versionId: { not: newest.versionId }, createdAt: { lt: newest.createdAt } },
    orderBy: { createdAt: "desc" },
    select: { versionId: true, version: { select: { number: true } } },
  });
  if (!previous) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${newest.version.number} is the first version of this rule to enforce: there is no previous version to roll back to` });
  return {
    current: current.filter((d) => d.versionId !== previous.versionId).map((d) => ({ deploymentId: d.id, versionId: d.versionId, number: d.version.number })),
    previous: { versionId: previous.versionId, number: previous.version.number },
  };
}

/**
 * Returns enforcement to the previous enforcing version. The normal path needs an approved
 * promotion request for the previous version's graph and uses it up (the same rule as any promotion); the
 * emergency path needs a written reason instead, and both are audited by the caller with the plan.
 * In the rule job this is one switch at a checkpoint boundary (./deployments.ts): the previous
 * version enforces and the current one drops to `currentTo` (shadow by default, or stopped) for
 * every output after the same barrier, so no gap and no alert enforced twice. Enforcing deployments
 * outside the rule job (jobs of their own, from before rule jobs) are stopped afterwards.
 */
export async function rollbackEnforcement(prisma: PrismaClient, runnerUrl: string, input: { pipelineId: string; emergency: boolean; reason: string; currentTo?: "shadow" | "stopped"; actor?: string }) {
  const plan = await rollbackPlan(prisma, input.pipelineId);
  let promotionId: string | null = null;
  let deployment: Awaited<ReturnType<typeof deployVersion>>;
  if (input.emergency) {
    if (input.reason.trim().length < MIN_WRITTEN_REASON) throw new TRPCError({ code: "BAD_REQUEST", message: `an emergency rollback needs a written reason (${MIN_WRITTEN_REASON} characters or more): it goes on the audit trail` });
    deployment = await deployVersion(prisma, runnerUrl, { versionId: plan.previous.versionId, mode: "enforcing", previousMode: input.currentTo ?? "shadow" });
  } else {
    // The approved path uses up the previous version's approval, as any enforcing deploy does.
    const approved = await enforceApproved(prisma, runnerUrl, { versionId: plan.previous.versionId, previousMode: input.currentTo ?? "shadow" });
    ({ deployment } = approved);
    promotionId = approved.promotion.id;
  }
  const stopped: { deploymentId: string; status: string }[] = [];
  for (const d of plan.current) {
    const row = await prisma.deployment.findUnique({ where: { id: d.deploymentId }, select: { status: true, runnerJobId: true } });
    if (row?.runnerJobId?.startsWith(RULE_JOB_PREFIX) && row.status !== "pending" && row.status !== "running") {
      // Closed by the switch itself.
      stopped.push({ deploymentId: d.deploymentId, status: row.status });
      continue;
    }
    const result = await stopDeployment(prisma, runnerUrl, d.deploymentId);
    stopped.push({ deploymentId: d.deploymentId, status: result.deployment.status });
  }
  // The emergency path skipped the approval rule: approvers are told (in the app, and by webhook when set).
  const notification = input.emergency ? await notifyEmergencyRollback(prisma, { actor: input.actor ?? "unknown", pipelineId: input.pipelineId, reason: input.reason, to: plan.previous, from: plan.current, deploymentId: deployment.id }, serverEnv().notifyWebhook) : null;
  return { deployment, plan, stopped, promotionId, notificationId: notification?.id ?? null };
}
