// Deploying a version: validate it again (the catalog may have changed since it was saved), record
// a Deployment, hand the pipeline to the runner, and record what the runner said.
import { TRPCError } from "@trpc/server";
import { validatePipeline } from "@keyflow/operators";
import type { DeploymentMode, DeploymentStatus, PrismaClient } from "@keyflow/db";
import { notFound, pipelineRejected } from "../errors";
import { fromJsonColumn } from "../json";
import { pipelineForMode } from "./deployment-mode";
import { RunnerError, RunnerRefusedError, submitJob, type JobStart } from "../runner-client";

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

/** Deploys a version; `start` restores it from a checkpoint or savepoint, at another parallelism (restore, rescale). */
export async function deployVersion(prisma: PrismaClient, runnerUrl: string, input: { versionId: string; mode: DeploymentMode; start?: JobStart }) {
  const version = await prisma.pipelineVersion.findUnique({
    where: { id: input.versionId },
    select: { id: true, number: true, pipelineId: true, graph: true, pipeline: { select: { name: true } } },
  });
  if (!version) throw notFound("version", input.versionId);
  // Shadow deployments write their alerts to <rule>.shadow, never to the enforcement topic.
  const pipeline = pipelineForMode(fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`), input.mode);
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
    await prisma.deployment.update({ where: { id: deployment.id }, data: { status: "failed", failureReason: reason, stoppedAt: new Date() } });
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
