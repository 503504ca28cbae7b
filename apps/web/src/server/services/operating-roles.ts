// The role matrix for operating a running job, written once: the procedures check it
// (requireJobAction) and the Operations tab reads it (deployment.allowedActions) to disable, with the
// reason, what the caller may not do. A job that writes an enforcement output (a rule job with an
// enforcing branch, or a test job of an approved version) is operated by approvers only.
import { TRPCError } from "@trpc/server";
import type { PrismaClient, UserRole } from "@keyflow/db";
import { hasRole, type SessionUser } from "../auth/roles";
import { notFound } from "../errors";
import { hasApprovedGraph } from "./deployment-mode";
import { RULE_JOB_PREFIX } from "./rule-jobs";

export const JOB_ACTIONS = ["stop", "throttle", "savepoint", "restore", "rescale"] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/**
 * The role each action needs on a job that writes an enforcement output, and on one that does not.
 * A savepoint changes nothing the job writes; every other action stops, slows, rewinds or re-routes
 * what it writes (stopping a shadow branch is a routing switch of the enforcing job).
 */
export const OPERATING_MATRIX: Record<JobAction, { enforcing: UserRole; otherwise: UserRole }> = {
  stop: { enforcing: "approver", otherwise: "analyst" },
  throttle: { enforcing: "approver", otherwise: "analyst" },
  savepoint: { enforcing: "analyst", otherwise: "analyst" },
  restore: { enforcing: "approver", otherwise: "analyst" },
  rescale: { enforcing: "approver", otherwise: "analyst" },
};
/** A restore from a savepoint that is not one of the job's own: always an approver's explicit choice. */
export const RESTORE_FROM_ANOTHER_JOB: UserRole = "approver";

const live = ["pending", "running"] as const;

export interface JobEnforcement {
  deploymentId: string;
  pipelineId: string;
  rule: string;
  runnerJobId: string | null;
  versionNumber: number;
  /** The deployment itself is the enforcing version (its stop asks who enforces instead). */
  isEnforcingVersion: boolean;
  /** What of this job writes an enforcement output, or null. */
  enforcing: { deploymentId: string; versionId: string; versionNumber: number; why: string } | null;
}

/** Whether the deployment's job writes an enforcement output, and through which version. */
export async function jobEnforcement(prisma: PrismaClient, deploymentId: string): Promise<JobEnforcement> {
  const row = await prisma.deployment.findUnique({
    where: { id: deploymentId },
    select: { id: true, pipelineId: true, versionId: true, mode: true, status: true, runnerJobId: true, version: { select: { number: true, graphHash: true } }, pipeline: { select: { name: true } } },
  });
  if (!row) throw notFound("deployment", deploymentId);
  const isLive = (live as readonly string[]).includes(row.status);
  const base = { deploymentId, pipelineId: row.pipelineId, rule: row.pipeline.name, runnerJobId: row.runnerJobId, versionNumber: row.version.number, isEnforcingVersion: isLive && row.mode === "enforcing" };
  if (row.runnerJobId?.startsWith(RULE_JOB_PREFIX)) {
    const branch = await prisma.deployment.findFirst({
      where: { runnerJobId: row.runnerJobId, mode: "enforcing", status: { in: [...live] } },
      orderBy: { createdAt: "desc" },
      select: { id: true, versionId: true, version: { select: { number: true } } },
    });
    return { ...base, enforcing: branch ? { deploymentId: branch.id, versionId: branch.versionId, versionNumber: branch.version.number, why: `rule job ${row.runnerJobId} has an enforcing branch (version ${branch.version.number})` } : null };
  }
  if (!isLive) return { ...base, enforcing: null };
  if (row.mode === "enforcing") return { ...base, enforcing: { deploymentId, versionId: row.versionId, versionNumber: row.version.number, why: `deployment ${deploymentId} enforces version ${row.version.number}` } };
  // A test job writes its sinks' own outputs only for a version with an approved promotion (./deployment-mode.ts).
  if (row.mode === "test" && (await hasApprovedGraph(prisma, row.versionId, row.version.graphHash))) {
    return { ...base, enforcing: { deploymentId, versionId: row.versionId, versionNumber: row.version.number, why: `test job ${row.runnerJobId ?? deploymentId} writes the outputs of approved version ${row.version.number}` } };
  }
  return { ...base, enforcing: null };
}

export interface ActionVerdict {
  allowed: boolean;
  /** Why not, in words the UI shows next to the disabled button; null when allowed. */
  reason: string | null;
}

export function verdictOf(user: Pick<SessionUser, "role">, action: JobAction, job: Pick<JobEnforcement, "enforcing">): ActionVerdict {
  const rule = OPERATING_MATRIX[action];
  const needed = job.enforcing ? rule.enforcing : rule.otherwise;
  if (hasRole(user.role, needed)) return { allowed: true, reason: null };
  return { allowed: false, reason: `needs the ${needed} role${job.enforcing ? `: ${job.enforcing.why}` : ""}` };
}

/** What the caller may do on the deployment's job, each with its reason when not: the Operations tab's buttons follow it. */
export async function allowedJobActions(prisma: PrismaClient, user: SessionUser, deploymentId: string) {
  const job = await jobEnforcement(prisma, deploymentId);
  const actions = Object.fromEntries(JOB_ACTIONS.map((a) => [a, verdictOf(user, a, job)])) as Record<JobAction, ActionVerdict>;
  const anotherJob: ActionVerdict = hasRole(user.role, RESTORE_FROM_ANOTHER_JOB) ? { allowed: true, reason: null } : { allowed: false, reason: `restoring from another job's savepoint needs the ${RESTORE_FROM_ANOTHER_JOB} role` };
  return {
    deploymentId,
    enforcing: job.enforcing ? { deploymentId: job.enforcing.deploymentId, versionNumber: job.enforcing.versionNumber, why: job.enforcing.why } : null,
    isEnforcingVersion: job.isEnforcingVersion,
    actions,
    restoreFromAnotherJob: anotherJob,
  };
}

/** Refuses (FORBIDDEN, naming the role and why) an action the caller's role may not take on this job. */
export async function requireJobAction(prisma: PrismaClient, user: SessionUser, path: string, deploymentId: string, action: JobAction): Promise<JobEnforcement> {
  const job = await jobEnforcement(prisma, deploymentId);
  const verdict = verdictOf(user, action, job);
  if (!verdict.allowed) throw new TRPCError({ code: "FORBIDDEN", message: `${path} ${verdict.reason}; ${user.email} is an ${user.role}` });
  return job;
}

/**
 * Whether `savepointPath` is one of the job's own savepoints: one the app took of it and recorded
 * on the audit trail (a savepoint, or the savepoint a restore or rescale stopped it with). The job
 * is the rule job (its id), or for a job of its own the deployments of the same version and mode.
 */
export async function isOwnSavepoint(prisma: PrismaClient, deploymentId: string, savepointPath: string): Promise<boolean> {
  const row = await prisma.deployment.findUnique({ where: { id: deploymentId }, select: { runnerJobId: true, versionId: true, mode: true } });
  if (!row) throw notFound("deployment", deploymentId);
  const sameJob = row.runnerJobId?.startsWith(RULE_JOB_PREFIX) ? { runnerJobId: row.runnerJobId } : { versionId: row.versionId, mode: row.mode };
  const ids = (await prisma.deployment.findMany({ where: sameJob, select: { id: true } })).map((d) => d.id);
  const events = await prisma.auditEvent.findMany({ where: { subjectType: "deployment", subjectId: { in: ids }, action: { in: ["savepoint", "restore", "rescale"] } }, select: { details: true } });
  return events.some((e) => {
    const d = e.details as { path?: unknown; savepointPath?: unknown } | null;
    return d?.path === savepointPath || d?.savepointPath === savepointPath;
  });
}

/**
 * A restore or resume from a savepoint: one of the job's own, or another job's that an approver
 * picks explicitly (`anotherJob`). Anything else is refused, naming the savepoint.
 */
export async function requireSavepointChoice(
  prisma: PrismaClient,
  user: Pick<SessionUser, "email" | "role">,
  path: string,
  choice: { deploymentId: string; runnerJobId: string | null; savepointPath: string; anotherJob: boolean },
): Promise<void> {
  if (choice.anotherJob) {
    if (!hasRole(user.role, RESTORE_FROM_ANOTHER_JOB)) throw new TRPCError({ code: "FORBIDDEN", message: `${path} from another job's savepoint needs the ${RESTORE_FROM_ANOTHER_JOB} role; ${user.email} is an ${user.role}` });
    return;
  }
  if (await isOwnSavepoint(prisma, choice.deploymentId, choice.savepointPath)) return;
  const job = choice.runnerJobId ?? choice.deploymentId;
  throw new TRPCError({
    code: "BAD_REQUEST",
    message: `${choice.savepointPath} is not a savepoint of ${job.startsWith(RULE_JOB_PREFIX) ? "rule job" : "job"} ${job} (its own: a savepoint taken of it, or the one a restore or change of parallelism stopped it with); restore from one of its kept checkpoints or own savepoints, or, as an approver, pick another job's savepoint explicitly`,
  });
}

