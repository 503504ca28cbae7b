// Deploying a version: validate it again (the catalog may have changed since it was saved), record
// a Deployment, hand it to the runner, and record what the runner said. Shadow and enforcing
// versions of a rule are branches of one rule job (./rule-jobs.ts): the first deploy starts it, a
// new version joins it through a savepoint (the other branches keep their state), and a version
// already in the job changes mode at a checkpoint boundary (promotion: it enforces and the version
// that enforced drops to shadow or stops at the same boundary). Test deployments and restores of a
// single job (`start`) still run as jobs of their own.
import { TRPCError } from "@trpc/server";
import { validatePipeline } from "@keyflow/operators";
import type { DeploymentMode, DeploymentStatus, PrismaClient } from "@keyflow/db";
import { notFound, pipelineRejected } from "../errors";
import { fromJsonColumn } from "../json";
import { hasApprovedGraph, pipelineForMode } from "./deployment-mode";
import { RunnerError, RunnerRefusedError, submitJob, type JobStart } from "../runner-client";
import { branchSpecs, liveRuleJob, oneAtATime, recordSwitch, RULE_JOB_PREFIX, ruleJobTrouble, startRuleJob, stopRuleJobWithSavepoint, switchRouting, type BranchMode, type RoutingSwitch } from "./rule-jobs";

/** The runner's job status in the Deployment's vocabulary (a job it accepted is starting or running). */
function deploymentStatus(runnerStatus: string | undefined): DeploymentStatus {
  switch (runnerStatus) {
    case "failed":
      return "failed";
    case "stopped":
    case "finished":
      return "stopped";
    default:
      return "running";
  }
}

export interface DeployInput {
  versionId: string;
  mode: DeploymentMode;
  /** Restore a job of its own from a checkpoint or savepoint, at another parallelism (restore, rescale). */
  start?: JobStart;
  /** When this version starts enforcing in the rule job: what the version that enforced becomes (default shadow). */
  previousMode?: "shadow" | "stopped";
}

/** Deploys a version: a branch of its rule's job in shadow or enforcing mode; a job of its own in test mode or with `start`. */
export async function deployVersion(prisma: PrismaClient, runnerUrl: string, input: DeployInput): Promise<Deployment & { routingSwitch: RoutingSwitch | null }> {
  if (input.mode === "test") return { ...(await deploySingleJob(prisma, runnerUrl, input)), routingSwitch: null };
  if (input.start !== undefined) {
    const restored = await restartRuleJob(prisma, runnerUrl, { ...input, mode: input.mode, start: input.start });
    return restored ?? { ...(await deploySingleJob(prisma, runnerUrl, input)), routingSwitch: null };
  }
  const mode = input.mode;
  const pipelineId = (await prisma.pipelineVersion.findUnique({ where: { id: input.versionId }, select: { pipelineId: true } }))?.pipelineId;
  if (!pipelineId) throw notFound("version", input.versionId);
  return oneAtATime(pipelineId, () => deployBranch(prisma, runnerUrl, { ...input, mode }));
}



/**
 * A restore or rescale of a rule job's branch (the job controls stopped the rule job with a
 * savepoint): the rule job again, with the branches its live rows list, from that folder. Null when
 * the version is not a branch of a rule job (a job of its own, from before rule jobs).
 */
async function restartRuleJob(prisma: PrismaClient, runnerUrl: string, input: DeployInput & { mode: "shadow" | "enforcing"; start: JobStart }): Promise<(Deployment & { routingSwitch: null }) | null> {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: input.versionId }, select: { id: true, number: true, pipelineId: true, graph: true, pipeline: { select: { name: true } } } });
  if (!version) throw notFound("version", input.versionId);
  // The job controls have just closed the version's row: its newest row names the rule job.
  const last = await prisma.deployment.findFirst({ where: { versionId: version.id, runnerJobId: { startsWith: RULE_JOB_PREFIX } }, orderBy: { createdAt: "desc" }, select: { runnerJobId: true } });
  const jobId = last?.runnerJobId;
  if (!jobId) return null;
  const others = await prisma.deployment.findMany({
    where: { runnerJobId: jobId, versionId: { not: version.id }, mode: { in: ["shadow", "enforcing"] }, status: { in: ["pending", "running"] } },
    orderBy: { createdAt: "desc" },
    select: { id: true, versionId: true, mode: true, version: { select: { number: true, graph: true } } },
  });
  const branches = [
    { deploymentId: "", versionId: version.id, number: version.number, mode: input.mode, graph: version.graph },
    ...others.map((r) => ({ deploymentId: r.id, versionId: r.versionId, number: r.version.number, mode: r.mode as "shadow" | "enforcing", graph: r.version.graph })),
  ];
  const rule = { name: version.pipeline.name, branches: branchSpecs({ branches }) };
  try {
    await startRuleJob(runnerUrl, { jobId, rule, ...input.start });
  } catch (error) {
    throw ruleJobTrouble(error, `restarting rule job ${jobId}`);
  }
  const row = await prisma.deployment.create({ data: { pipelineId: version.pipelineId, versionId: version.id, mode: input.mode, status: "running", runnerJobId: jobId } });
  return { ...row, routingSwitch: null };
}

type Deployment = Awaited<ReturnType<PrismaClient["deployment"]["findUniqueOrThrow"]>>;

async function deployBranch(prisma: PrismaClient, runnerUrl: string, input: DeployInput & { mode: "shadow" | "enforcing" }): Promise<Deployment & { routingSwitch: RoutingSwitch | null }> {
  const version = await prisma.pipelineVersion.findUnique({
    where: { id: input.versionId },
    select: { id: true, number: true, pipelineId: true, graph: true, pipeline: { select: { name: true } } },
  });
  if (!version) throw notFound("version", input.versionId);
  const pipeline = fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`);
  const result = validatePipeline(pipeline);
  if (!result.ok) throw pipelineRejected(`cannot deploy version ${version.number}`, result.issues);
  const key = String(version.number);
  const live = await liveRuleJob(prisma, runnerUrl, version.pipelineId);

  if (!live) {
    // The rule's first live version: a new rule job (a new id, so no old job's checkpoints are restored).
    const deployment = await prisma.deployment.create({ data: { pipelineId: version.pipelineId, versionId: version.id, mode: input.mode, status: "pending" }, select: { id: true } });
    const jobId = `${RULE_JOB_PREFIX}${deployment.id}`;
    try {
      const job = await startRuleJob(runnerUrl, { jobId, rule: { name: version.pipeline.name, branches: [{ version: version.number, mode: input.mode, pipeline }] } });
      // The runner's id for the job (the one asked for).
      const row = await prisma.deployment.update({ where: { id: deployment.id }, data: { runnerJobId: job.id, status: deploymentStatus(job.status) } });
      return { ...row, routingSwitch: null };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      await prisma.deployment.update({ where: { id: deployment.id }, data: { status: "failed", desired: "stopped", failureReason: reason, stoppedAt: new Date() } });
      throw ruleJobTrouble(error, `deployment ${deployment.id} failed`);
    }
  }

  const current = live.modes[key];
  const existing = live.branches.find((b) => b.versionId === version.id && b.mode === input.mode);
  if (existing) return { ...(await prisma.deployment.findUniqueOrThrow({ where: { id: existing.deploymentId } })), routingSwitch: null };
  if (current === "enforcing") {
    throw new TRPCError({ code: "CONFLICT", message: `version ${version.number} enforces: to take enforcement from it, promote another version or roll back` });
  }
  const enforcing = Object.entries(live.modes).find(([v, m]) => m === "enforcing" && v !== key)?.[0];

  if (current === undefined) {
    // A version new to the job: a savepoint, and the job again with one more branch. The branches
    // it had restore their state by node id; stopped ones are dropped (allowNonRestoredState).
    const addAs: BranchMode = input.mode === "enforcing" && enforcing !== undefined ? "shadow" : input.mode;
    const keep = branchSpecs(live).filter((b) => live.modes[String(b.version)] !== "stopped");
    const dropped = Object.entries(live.modes).some(([v, m]) => m === "stopped" || !keep.some((b) => String(b.version) === v));
    const rule = { name: version.pipeline.name, branches: [...keep, { version: version.number, mode: addAs, pipeline }] };
    let savepointPath: string;
    try {
      ({ savepointPath } = await stopRuleJobWithSavepoint(runnerUrl, live.jobId));
    } catch (error) {
      throw ruleJobTrouble(error, `adding version ${version.number} to rule job ${live.jobId}`);
    }
    try {
      await startRuleJob(runnerUrl, { jobId: live.jobId, rule, restoreFrom: savepointPath, ...(dropped ? { allowNonRestoredState: true } : {}) });
    } catch (error) {
      // Refused (its state does not fit, say): the job goes back to its savepoint with the branches it had.
      await startRuleJob(runnerUrl, { jobId: live.jobId, rule: { name: version.pipeline.name, branches: keep }, restoreFrom: savepointPath, ...(dropped ? { allowNonRestoredState: true } : {}) }).catch(() => undefined);
      throw ruleJobTrouble(error, `adding version ${version.number} to rule job ${live.jobId}`);
    }
    await prisma.deployment.updateMany({ where: { runnerJobId: live.jobId, status: { in: ["pending", "running"] }, versionId: { notIn: live.branches.filter((b) => keep.some((k) => k.version === b.number)).map((b) => b.versionId) } }, data: { status: "stopped", desired: "stopped", stoppedAt: new Date() } });
    const row = await prisma.deployment.create({ data: { pipelineId: version.pipelineId, versionId: version.id, mode: addAs, status: "running", runnerJobId: live.jobId } });
    if (addAs === input.mode) return { ...row, routingSwitch: null };
  }

  // A mode change at the next checkpoint boundary; a promotion moves the enforcing version in the same switch.
  const modes: Record<string, BranchMode> = { [key]: input.mode };
  if (input.mode === "enforcing" && enforcing !== undefined) modes[enforcing] = input.previousMode ?? "shadow";
  let done: RoutingSwitch;
  try {
    done = await switchRouting(runnerUrl, live.jobId, modes);
  } catch (error) {
    throw ruleJobTrouble(error, `switching version ${version.number} to ${input.mode}`);
  }
  const opened = await recordSwitch(prisma, { jobId: live.jobId, pipelineId: version.pipelineId }, done);
  const row = opened.get(version.number);
  if (!row) throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: `the runner switched ${JSON.stringify(done.before)} to ${JSON.stringify(done.after)}, but version ${version.number} is not ${input.mode} in it` });
  return { ...(await prisma.deployment.findUniqueOrThrow({ where: { id: row.id } })), routingSwitch: done };
}

/** A version as a job of its own (test mode, or a restore / rescale of one), its sinks moved to shadow outputs unless it enforces or is an approved version's test. */
async function deploySingleJob(prisma: PrismaClient, runnerUrl: string, input: DeployInput) {
  const version = await prisma.pipelineVersion.findUnique({
    where: { id: input.versionId },
    select: { id: true, number: true, pipelineId: true, graph: true, graphHash: true, pipeline: { select: { name: true } } },
  });
  if (!version) throw notFound("version", input.versionId);
  // Shadow deployments, and test deployments of a version without an approved promotion (on every
  // path: deploy, restore, rescale), write their alerts to <rule>.shadow, never to the enforcement topic.
  const approved = input.mode === "test" && (await hasApprovedGraph(prisma, version.id, version.graphHash));
  const pipeline = pipelineForMode(fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`), input.mode, { approved, version: version.number });
  const result = validatePipeline(pipeline);
  if (!result.ok) throw pipelineRejected(`cannot deploy version ${version.number}`, result.issues);

  const deployment = await prisma.deployment.create({
    data: { pipelineId: version.pipelineId, versionId: version.id, mode: input.mode, status: "pending" },
    select: { id: true },
  });
  try {
    const job = await submitJob(runnerUrl, { deploymentId: deployment.id, pipeline, ...input.start });
    return await prisma.deployment.update({
      where: { id: deployment.id },
      data: { runnerJobId: job.jobId, status: deploymentStatus(job.status) },
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    await prisma.deployment.update({ where: { id: deployment.id }, data: { status: "failed", desired: "stopped", failureReason: reason, stoppedAt: new Date() } });
    // Refused (state that does not fit a restore, a parallelism above maxParallelism): the runner's reason names the nodes.
    if (error instanceof RunnerRefusedError) {
      throw new TRPCError({ code: "BAD_REQUEST", message: `deployment ${deployment.id} refused: ${reason}`, cause: error });
    }
    if (error instanceof RunnerError) {
      throw new TRPCError({ code: "BAD_GATEWAY", message: `deployment ${deployment.id} failed: ${reason}`, cause: error });
    }
    throw error;
  }
}
