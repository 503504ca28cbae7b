// The reconciler: the database is the desired state (Deployment.desired). Every few seconds, and at
// once when the runner answers again, it compares the deployments that should run with the
// runner's GET /jobs, and submits every missing job again under its SAME id, so the runner restores
// it from the newest committed checkpoint in its folder (the sources' positions, the keyed state,
// a rule job's routing). Rule jobs with an enforcing branch go first. A job the runner refuses (its
// checkpoint cannot be read or does not fit) is marked failed with the reason and approvers are
// notified. Restarts and failures are on the audit trail as the reconciler's service actor.
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import { RunnerError, RunnerRefusedError, listJobs, submitJob, type RunnerJob } from "../runner-client";
import { fromJsonColumn } from "../json";
import { pipelineForMode } from "./deployment-mode";
import { notifyApprovers } from "./notifications";
import { runnerAnswered, runnerSilent } from "./runner-health";
import { oneAtATime, RULE_JOB_PREFIX, startRuleJob, type RuleBranchSpec } from "./rule-jobs";

/** Who the audit trail names for what the reconciler does. */
export const RECONCILER_ACTOR = "reconciler@keyflow.local";

export interface ReconcileResult {
  runnerReachable: boolean;
  /** Jobs submitted again, in the order they were (enforcing first). */
  restarted: { jobId: string; pipelineId: string; deploymentIds: string[] }[];
  /** Jobs the runner refused: their deployments are failed now. */
  failed: { jobId: string; pipelineId: string; deploymentIds: string[]; reason: string }[];
}

type Row = Awaited<ReturnType<typeof desiredRows>>[number];

function desiredRows(prisma: PrismaClient) {
  return prisma.deployment.findMany({
    where: { desired: "running", mode: { in: ["shadow", "enforcing"] }, runnerJobId: { not: null } },
    orderBy: { createdAt: "desc" },
    select: { id: true, pipelineId: true, versionId: true, mode: true, status: true, runnerJobId: true, version: { select: { number: true, graph: true } }, pipeline: { select: { name: true } } },
  });
}

/** One pass: every deployment that should run and that the runner does not have is submitted again. */
export async function reconcile(prisma: PrismaClient, env: { runnerUrl: string; notifyWebhook?: string | undefined }): Promise<ReconcileResult> {
  const result: ReconcileResult = { runnerReachable: false, restarted: [], failed: [] };
  let jobs: RunnerJob[];
  try {
    jobs = await listJobs(env.runnerUrl);
  } catch (error) {
    runnerSilent(error instanceof Error ? error.message : String(error));
    return result;
  }
  runnerAnswered();
  result.runnerReachable = true;
  const onRunner = new Map(jobs.map((j) => [j.id, j.status]));

  const byJob = new Map<string, Row[]>();
  for (const row of await desiredRows(prisma)) {
    const jobId = row.runnerJobId ?? "";
    // Present (starting, running, restarting, stopping), or ended on the runner (stopped, finished,
    // failed): then its own record says why, and a deploy or stop in progress is not raced.
    if (onRunner.has(jobId)) continue;
    byJob.set(jobId, [...(byJob.get(jobId) ?? []), row]);
  }
  // Enforcement first: it is what the bank acts on.
  const missing = [...byJob.entries()].sort(([, a], [, b]) => Number(b.some((r) => r.mode === "enforcing")) - Number(a.some((r) => r.mode === "enforcing")));
  for (const [jobId, rows] of missing) {
    const pipelineId = rows[0]?.pipelineId ?? "";
    const outcome = await oneAtATime(pipelineId, () => restore(prisma, env, jobId, rows));
    if (outcome === "restarted") result.restarted.push({ jobId, pipelineId, deploymentIds: rows.map((r) => r.id) });
    else if (outcome !== "later") result.failed.push({ jobId, pipelineId, deploymentIds: rows.map((r) => r.id), reason: outcome.reason });
  }
  return result;
}

/** Submits the job again under its id; "later" when the runner did not answer (the next pass tries again). */
async function restore(prisma: PrismaClient, env: { runnerUrl: string; notifyWebhook?: string | undefined }, jobId: string, rows: Row[]): Promise<"restarted" | "later" | { reason: string }> {
  // Still wanted and still missing? A deploy or stop may have run between the listing and now.
  const ids = rows.map((r) => r.id);
  const still = await prisma.deployment.findMany({ where: { id: { in: ids }, desired: "running" }, select: { id: true } });
  if (still.length !== rows.length) return "later";
  const first = rows[0];
  if (!first) return "later";
  const name = first.pipeline.name;
  const branches = ruleBranches(rows);
  try {
    if (jobId.startsWith(RULE_JOB_PREFIX)) await startRuleJob(env.runnerUrl, { jobId, rule: { name, branches } });
    else await submitJob(env.runnerUrl, { deploymentId: jobId, pipeline: pipelineForMode(fromJsonColumn(first.version.graph, `version ${first.version.number} of ${name}`), first.mode, { version: first.version.number }) });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (!(error instanceof RunnerRefusedError) || error.status === 409) {
      if (error instanceof RunnerError) runnerSilent(reason);
      return "later";
    }
    await prisma.$transaction(async (tx) => {
      await tx.deployment.updateMany({ where: { id: { in: ids } }, data: { status: "failed", desired: "stopped", failureReason: `not restored after a runner restart: ${reason}`, stoppedAt: new Date() } });
      await appendAuditEvent(tx, { actor: RECONCILER_ACTOR, action: "reconcile", subjectType: "deployment", subjectId: first.id, details: { pipelineId: first.pipelineId, runnerJobId: jobId, deploymentIds: ids, outcome: "failed", error: reason } });
    });
    const versions = branches.map((b) => `v${b.version} (${b.mode})`).join(", ");
    await notifyApprovers(
      prisma,
      {
        kind: "restore_failed",
        actor: RECONCILER_ACTOR,
        pipelineId: first.pipelineId,
        title: `${name}: ${versions} could not be restored after a runner restart`,
        body: `The runner refused job ${jobId} from its newest checkpoint, so ${versions} of ${name} is not running and is marked failed: ${reason}`,
        details: { pipelineId: first.pipelineId, name, runnerJobId: jobId, deploymentIds: ids, reason },
      },
      env.notifyWebhook,
    );
    return { reason };
  }
  await prisma.$transaction(async (tx) => {
    await tx.deployment.updateMany({ where: { id: { in: ids }, status: { not: "running" } }, data: { status: "running", stoppedAt: null } });
    await appendAuditEvent(tx, {
      actor: RECONCILER_ACTOR,
      action: "reconcile",
      subjectType: "deployment",
      subjectId: first.id,
      details: { pipelineId: first.pipelineId, runnerJobId: jobId, deploymentIds: ids, outcome: "restarted", from: "newest committed checkpoint", branches: branches.map((b) => ({ version: b.version, mode: b.mode })) },
    });
  });
  return "restarted";
}

/** A rule job's branches from its rows that should run: one per version (its newest row), enforcing first. */
function ruleBranches(rows: Row[]): RuleBranchSpec[] {
  const seen = new Set<number>();
  return rows
    .filter((r) => !seen.has(r.version.number) && seen.add(r.version.number))
    .sort((a, b) => Number(b.mode === "enforcing") - Number(a.mode === "enforcing"))
    .map((r) => ({ version: r.version.number, mode: r.mode as "shadow" | "enforcing", pipeline: fromJsonColumn(r.version.graph, `version ${r.version.number} of ${r.pipeline.name}`) }));
}

const holder = globalThis as typeof globalThis & { __keyflowReconciler?: { stop(): void } };

/**
 * Runs reconcile every `intervalMs` in this server process (once per process, whoever calls), and
 * at once when the runner answers again after a silence. KEYFLOW_RECONCILE_INTERVAL_MS sets the
 * interval (default 3 s); 0 turns the reconciler off.
 */
export function startReconciler(opts: { prisma: () => Promise<PrismaClient>; env: () => { runnerUrl: string; notifyWebhook?: string | undefined }; intervalMs?: number; log?: (line: string) => void }): { stop(): void } {
  if (holder.__keyflowReconciler) return holder.__keyflowReconciler;
  const intervalMs = opts.intervalMs ?? 3_000;
  const log = opts.log ?? ((line: string) => console.log(line));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let wasReachable = true;
  const tick = async () => {
    try {
      const result = await reconcile(await opts.prisma(), opts.env());
      if (result.runnerReachable !== wasReachable) log(result.runnerReachable ? "reconciler: the runner answers again" : "reconciler: the runner does not answer");
      wasReachable = result.runnerReachable;
      for (const r of result.restarted) log(`reconciler: started job ${r.jobId} again from its newest checkpoint (deployments ${r.deploymentIds.join(", ")})`);
      for (const f of result.failed) log(`reconciler: job ${f.jobId} could not be restored, its deployments are failed: ${f.reason}`);
    } catch (error) {
      log(`reconciler: ${error instanceof Error ? error.message : String(error)}`);
    }
    // A runner that was silent is polled more often, so its return is noticed at once.
    if (!stopped) timer = setTimeout(() => void tick(), wasReachable ? intervalMs : Math.min(intervalMs, 1_000));
  };
  timer = setTimeout(() => void tick(), 0);
  const handle = {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      holder.__keyflowReconciler = undefined;
    },
  };
  holder.__keyflowReconciler = handle;
  return handle;
}
