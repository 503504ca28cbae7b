// Resuming a stopped deployment: its job again under the SAME runner job id, so the runner restores
// it from the newest checkpoint of its own folder (the final one its stop took), or from a savepoint
// folder given instead; the runner's state-compatibility check (restore-compat.ts, and a rule job's
// per-version check) refuses state that does not fit, naming the nodes. A branch of a rule job that
// still runs goes back into it at a checkpoint boundary instead (deployVersion). The deployment
// should run again from then on (desired = running), so the reconciler keeps it running.
import { TRPCError } from "@trpc/server";
import type { DeploymentMode, PrismaClient, UserRole } from "@keyflow/db";
import { hasRole, type SessionUser } from "../auth/roles";
import { notFound } from "../errors";
import { fromJsonColumn } from "../json";
import { submitJob } from "../runner-client";
import { hasApprovedGraph, pipelineForMode } from "./deployment-mode";
import { deployVersion } from "./deployments";
import { oneAtATime, RULE_JOB_PREFIX, ruleJobTrouble, startRuleJob } from "./rule-jobs";

/** The role a resume needs: an approver for anything that may write the enforcement output, an analyst for shadow. */
export function roleToResume(mode: DeploymentMode): UserRole {
  return mode === "shadow" ? "analyst" : "approver";
}

/** Refuses a caller whose role may not resume a deployment in `mode` (the one place the resume's role rule lives). */
export function assertMayResume(user: Pick<SessionUser, "email" | "role">, deployment: { id: string; mode: DeploymentMode }): void {
  const needed = roleToResume(deployment.mode);
  if (!hasRole(user.role, needed)) throw new TRPCError({ code: "FORBIDDEN", message: `resuming deployment ${deployment.id} (${deployment.mode}) needs the ${needed} role; ${user.email} is an ${user.role}` });
}

export interface ResumeInput {
  deploymentId: string;
  /** A savepoint folder on the runner to start from instead of the job's newest checkpoint. */
  savepointPath?: string | undefined;
  /** Drop the state of nodes the version no longer has. */
  allowNonRestoredState?: boolean | undefined;
}

/** The stopped deployment (with what a role check and the audit need), or why it cannot be resumed. */
export async function resumeTarget(prisma: PrismaClient, deploymentId: string) {
  const row = await prisma.deployment.findUnique({
    where: { id: deploymentId },
    select: { id: true, pipelineId: true, versionId: true, mode: true, status: true, desired: true, runnerJobId: true, failureReason: true, version: { select: { number: true, graph: true, graphHash: true } }, pipeline: { select: { name: true } } },
  });
  if (!row) throw notFound("deployment", deploymentId);
  if (row.status === "pending" || row.status === "running" || row.desired === "running") throw new TRPCError({ code: "PRECONDITION_FAILED", message: `deployment ${deploymentId} is ${row.status} and should run: only a stopped deployment can be resumed` });
  if (row.status === "finished") throw new TRPCError({ code: "PRECONDITION_FAILED", message: `deployment ${deploymentId} read its bounded sources to the end: there is nothing to resume` });
  if (!row.runnerJobId) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `deployment ${deploymentId} never reached the runner (${row.failureReason ?? row.status}): deploy its version again` });
  return { ...row, runnerJobId: row.runnerJobId };
}

/** Resumes the deployment; resolves with the deployment that runs now and where its state came from. */
export async function resumeDeployment(prisma: PrismaClient, runnerUrl: string, input: ResumeInput) {
  const target = await resumeTarget(prisma, input.deploymentId);
  const from = input.savepointPath ? `savepoint ${input.savepointPath}` : "its newest checkpoint";
  const jobId = target.runnerJobId;
  if (jobId.startsWith(RULE_JOB_PREFIX)) {
    const running = await prisma.deployment.count({ where: { pipelineId: target.pipelineId, mode: { in: ["shadow", "enforcing"] }, status: { in: ["pending", "running"] }, runnerJobId: { startsWith: RULE_JOB_PREFIX } } });
    if (running > 0) {
      // The rule's job runs (other versions): this version rejoins it, keeping the job's state.
      if (input.savepointPath) throw new TRPCError({ code: "BAD_REQUEST", message: `the rule job of ${target.pipeline.name} is running: v${target.version.number} rejoins it with the job's own state; restoring a savepoint is the job controls' restore` });
      const deployment = await deployVersion(prisma, runnerUrl, { versionId: target.versionId, mode: target.mode });
      return { deployment, runnerJobId: deployment.runnerJobId, from: "the running rule job" };
    }
  }
  return oneAtATime(target.pipelineId, async () => {
    const start = { ...(input.savepointPath ? { restoreFrom: input.savepointPath } : {}), ...(input.allowNonRestoredState ? { allowNonRestoredState: true } : {}) };
    const pipeline = fromJsonColumn(target.version.graph, `version ${target.version.number} of ${target.pipeline.name}`);
    try {
      if (jobId.startsWith(RULE_JOB_PREFIX)) {
        if (target.mode === "test") throw new TRPCError({ code: "BAD_REQUEST", message: `deployment ${target.id} is a test run, not a branch of a rule job` });
        await startRuleJob(runnerUrl, { jobId, rule: { name: target.pipeline.name, branches: [{ version: target.version.number, mode: target.mode, pipeline }] }, ...start });
      } else {
        await submitJob(runnerUrl, { deploymentId: jobId, pipeline: pipelineForMode(pipeline, target.mode, { version: target.version.number, approved: target.mode === "test" && (await hasApprovedGraph(prisma, target.versionId, target.version.graphHash)) }), ...start });
      }
    } catch (error) {
      throw ruleJobTrouble(error, `resuming deployment ${target.id} from ${from}`);
    }
    const deployment = await prisma.deployment.update({ where: { id: target.id }, data: { status: "running", desired: "running", stoppedAt: null, failureReason: null } });
    return { deployment, runnerJobId: jobId, from };
  });
}
