// A rule's shadow and enforcing versions run as branches of ONE runner job (apps/runner's rule jobs:
// POST /rule-jobs, GET/POST /jobs/:id/routing), so that promotion and rollback switch their outputs
// at one checkpoint boundary. Here: the runner calls, and the bookkeeping in Deployment rows. Every
// branch in shadow or enforcing mode is one live Deployment row whose runnerJobId is the rule job's
// id; a mode change closes the version's row (stopped) and opens one for the new mode (none for a
// stopped branch), so the rows keep the history that shadow age and rollback read.
import { z } from "zod";
import { TRPCError } from "@trpc/server";
import type { Prisma, PrismaClient } from "@keyflow/db";
import { fromJsonColumn } from "../json";
import { RunnerError, RunnerJobNotFoundError, RunnerRefusedError, withRunnerAuth } from "../runner-client";

export const RULE_JOB_PREFIX = "rule-";
/** Branch modes as the runner names them. */
export type BranchMode = "shadow" | "enforcing" | "stopped";

const routingSwitchSchema = z.object({
  checkpointId: z.number().int(),
  sources: z.record(z.string(), z.json()),
  before: z.record(z.string(), z.enum(["shadow", "enforcing", "stopped"])),
  after: z.record(z.string(), z.enum(["shadow", "enforcing", "stopped"])),
  requestedAt: z.string(),
  completedAt: z.string(),
});
export type RoutingSwitch = z.infer<typeof routingSwitchSchema>;

const ruleJobViewSchema = z.looseObject({
  id: z.string(),
  status: z.string(),
  routing: z.object({ modes: z.record(z.string(), z.enum(["shadow", "enforcing", "stopped"])) }).optional(),
  lastCheckpoint: z.looseObject({ id: z.number() }).nullable().optional(),
});
export type RuleJobView = z.infer<typeof ruleJobViewSchema>;

const compatSchema = z.object({ checkpoint: z.string().nullable(), compatible: z.boolean(), problems: z.array(z.string()), dropped: z.array(z.string()) });
export type RuleCompat = z.infer<typeof compatSchema>;

/** A switch waits for the runner's next checkpoint: a checkpoint interval plus its commit. */
const SWITCH_TIMEOUT_MS = 180_000;

async function call<T>(runnerUrl: string, method: string, pathname: string, schema: z.ZodType<T>, body?: unknown, timeoutMs = 60_000): Promise<T> {
  const what = `${method} ${pathname}`;
  let response: Response;
  try {
    response = await fetch(
      `${runnerUrl}${pathname}`,
      withRunnerAuth({ method, ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }), signal: AbortSignal.timeout(timeoutMs) }),
    );
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new RunnerError(`the runner at ${runnerUrl} did not answer ${what} (${reason}); is it running?`);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RunnerError(`the runner answered ${what} with something other than JSON: ${text.slice(0, 200)}`);
  }
  if (!response.ok) {
    const refusal = z.object({ error: z.string(), issues: z.array(z.string()).optional() }).safeParse(json);
    const message = refusal.success ? [refusal.data.error, ...(refusal.data.issues ?? [])].join("; ") : text.slice(0, 300);
    if (response.status === 404) throw new RunnerJobNotFoundError(`${what}: ${message}`);
    if (response.status >= 400 && response.status < 500) throw new RunnerRefusedError(response.status, `${what} refused by the runner: ${message}`, refusal.success ? (refusal.data.issues ?? []) : []);
    throw new RunnerError(`${what} failed on the runner: HTTP ${response.status} ${message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new RunnerError(`unexpected answer from the runner to ${what}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export interface RuleBranchSpec {
  version: number;
  mode: BranchMode;
  pipeline: unknown;
}

export function startRuleJob(runnerUrl: string, body: { jobId: string; rule: { name: string; branches: RuleBranchSpec[] }; restoreFrom?: string; parallelism?: number; allowNonRestoredState?: boolean }): Promise<RuleJobView> {
  return call(runnerUrl, "POST", "/rule-jobs", ruleJobViewSchema, body);
}

export function getRuleJob(runnerUrl: string, jobId: string): Promise<RuleJobView> {
  return call(runnerUrl, "GET", `/jobs/${encodeURIComponent(jobId)}`, ruleJobViewSchema);
}

/** The versions' new modes, applied at the runner's next checkpoint barrier; resolves with that checkpoint and the boundary offsets. */
export async function switchRouting(runnerUrl: string, jobId: string, modes: Record<string, BranchMode>): Promise<RoutingSwitch> {
  await untilRunning(runnerUrl, jobId);
  return call(runnerUrl, "POST", `/jobs/${encodeURIComponent(jobId)}/routing`, routingSwitchSchema, { modes }, SWITCH_TIMEOUT_MS);
}

/** A savepoint and a switch need a running job: one still starting (connecting, restoring) is waited for. */
export async function untilRunning(runnerUrl: string, jobId: string, timeoutMs = 60_000): Promise<RuleJobView> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const view = await getRuleJob(runnerUrl, jobId);
    if (view.status === "running" || !["starting", "restarting"].includes(view.status) || Date.now() > until) return view;
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function stopRuleJobWithSavepoint(runnerUrl: string, jobId: string): Promise<{ savepointPath: string }> {
  await untilRunning(runnerUrl, jobId);
  return call(runnerUrl, "POST", `/jobs/${encodeURIComponent(jobId)}/stop?savepoint=true`, z.looseObject({ savepointPath: z.string().min(1) }), {}, SWITCH_TIMEOUT_MS);
}

/** Whether a rule job of these branches restores from the running job's newest checkpoint (nodes named when not). */
export function checkRuleCompat(runnerUrl: string, jobId: string, branches: RuleBranchSpec[], name: string, allowNonRestoredState = false): Promise<RuleCompat> {
  return call(runnerUrl, "POST", "/rule-jobs/check", compatSchema.loose(), { jobId, rule: { name, branches }, ...(allowNonRestoredState ? { allowNonRestoredState } : {}) });
}

/**
 * Changes to one rule's job run one after the other in this server: two deploys at once would both
 * find no running job and start two, or stop the job for a savepoint under each other's feet.
 */
const ruleQueues = new Map<string, Promise<unknown>>();
export function oneAtATime<T>(pipelineId: string, work: () => Promise<T>): Promise<T> {
  const before = ruleQueues.get(pipelineId) ?? Promise.resolve();
  const next = before.catch(() => undefined).then(work);
  ruleQueues.set(pipelineId, next);
  void next.finally(() => {
    if (ruleQueues.get(pipelineId) === next) ruleQueues.delete(pipelineId);
  }).catch(() => undefined);
  return next;
}

const liveStatuses = ["pending", "running"] as const;

export interface LiveBranch {
  deploymentId: string;
  versionId: string;
  number: number;
  mode: "shadow" | "enforcing";
  graph: Prisma.JsonValue;
}

export interface LiveRuleJob {
  jobId: string;
  name: string;
  branches: LiveBranch[];
  /** The runner's own view: each version's mode (stopped branches included). */
  modes: Record<string, BranchMode>;
}

/**
 * The pipeline's running rule job and its live branches, or null. Rows the runner no longer backs
 * (it restarted, the job ended) are closed on the way, so a new deploy starts a fresh job.
 */
export async function liveRuleJob(prisma: PrismaClient, runnerUrl: string, pipelineId: string): Promise<LiveRuleJob | null> {
  const rows = await prisma.deployment.findMany({
    where: { pipelineId, mode: { in: ["shadow", "enforcing"] }, status: { in: [...liveStatuses] }, runnerJobId: { startsWith: RULE_JOB_PREFIX } },
    orderBy: { createdAt: "desc" },
    select: { id: true, versionId: true, mode: true, desired: true, runnerJobId: true, version: { select: { number: true, graph: true } }, pipeline: { select: { name: true } } },
  });
  const jobId = rows[0]?.runnerJobId;
  if (!jobId) return null;
  let view: RuleJobView | null = null;
  try {
    view = await getRuleJob(runnerUrl, jobId);
  } catch (error) {
    if (!(error instanceof RunnerJobNotFoundError)) throw error;
  }
  if (view === null && rows.some((r) => r.runnerJobId === jobId && r.desired === "running")) {
    // The runner restarted: a fresh job now would run beside the one the reconciler brings back.
    throw new TRPCError({ code: "PRECONDITION_FAILED", message: `rule job ${jobId} should run but the runner does not have it (it restarted); the reconciler is starting it again from its newest checkpoint: try again in a few seconds` });
  }
  const active = view !== null && ["starting", "running", "restarting"].includes(view.status);
  if (!active || !view?.routing) {
    await prisma.deployment.updateMany({ where: { runnerJobId: jobId, status: { in: [...liveStatuses] } }, data: { status: view?.status === "failed" ? "failed" : "stopped", desired: "stopped", stoppedAt: new Date() } });
    return null;
  }
  const branches = rows
    .filter((r) => r.runnerJobId === jobId)
    .map((r) => ({ deploymentId: r.id, versionId: r.versionId, number: r.version.number, mode: r.mode as "shadow" | "enforcing", graph: r.version.graph }));
  return { jobId, name: rows[0]?.pipeline.name ?? "", branches, modes: view.routing.modes };
}

/**
 * Records a completed switch: the rows of the versions whose mode changed are closed at the switch,
 * and rows for their new modes opened. Returns the new rows by version number.
 */
export async function recordSwitch(prisma: PrismaClient, job: { jobId: string; pipelineId: string }, done: RoutingSwitch): Promise<Map<number, { id: string; versionId: string; mode: string; status: string }>> {
  const opened = new Map<number, { id: string; versionId: string; mode: string; status: string }>();
  const at = new Date(done.completedAt);
  await prisma.$transaction(async (tx) => {
    for (const [key, mode] of Object.entries(done.after)) {
      if (done.before[key] === mode) continue;
      const version = await tx.pipelineVersion.findFirst({ where: { pipelineId: job.pipelineId, number: Number(key) }, select: { id: true } });
      if (!version) continue;
      await tx.deployment.updateMany({ where: { runnerJobId: job.jobId, versionId: version.id, status: { in: [...liveStatuses] } }, data: { status: "stopped", desired: "stopped", stoppedAt: at } });
      if (mode === "stopped") continue;
      const row = await tx.deployment.create({ data: { pipelineId: job.pipelineId, versionId: version.id, mode, status: "running", runnerJobId: job.jobId }, select: { id: true, versionId: true, mode: true, status: true } });
      opened.set(Number(key), row);
    }
  });
  return opened;
}

/** The job's branches as the runner takes them: one per version (its newest row). */
export function branchSpecs(job: Pick<LiveRuleJob, "branches">): RuleBranchSpec[] {
  const seen = new Set<number>();
  return job.branches.filter((b) => !seen.has(b.number) && seen.add(b.number)).map((b) => ({ version: b.number, mode: b.mode, pipeline: fromJsonColumn(b.graph, `version ${b.number}`) }));
}

/** A runner error as the tRPC error a caller of the web app sees. */
export function ruleJobTrouble(error: unknown, what: string): unknown {
  if (error instanceof RunnerRefusedError) return new TRPCError({ code: error.status === 409 ? "CONFLICT" : "BAD_REQUEST", message: `${what}: ${error.message}`, cause: error });
  if (error instanceof RunnerError) return new TRPCError({ code: "BAD_GATEWAY", message: `${what}: ${error.message}`, cause: error });
  return error;
}

/**
 * Stopping one branch of a rule job that has others: the version stops at the next checkpoint
 * boundary while the other branches run on. Null when the deployment is not such a branch (the
 * caller stops the whole job).
 */
export async function stopRuleBranch(prisma: PrismaClient, runnerUrl: string, deploymentId: string) {
  const row = await prisma.deployment.findUnique({ where: { id: deploymentId }, select: { pipelineId: true, runnerJobId: true, status: true, version: { select: { number: true } } } });
  if (!row?.runnerJobId?.startsWith(RULE_JOB_PREFIX) || (row.status !== "pending" && row.status !== "running")) return null;
  const others = await prisma.deployment.count({ where: { runnerJobId: row.runnerJobId, id: { not: deploymentId }, status: { in: [...liveStatuses] } } });
  if (others === 0) return null;
  const jobId = row.runnerJobId;
  const done = await oneAtATime(row.pipelineId, async () => {
    let s: RoutingSwitch;
    try {
      s = await switchRouting(runnerUrl, jobId, { [String(row.version.number)]: "stopped" });
    } catch (error) {
      throw ruleJobTrouble(error, `stopping version ${row.version.number} in rule job ${jobId}`);
    }
    await recordSwitch(prisma, { jobId, pipelineId: row.pipelineId }, s);
    return s;
  });
  const updated = await prisma.deployment.findUniqueOrThrow({ where: { id: deploymentId }, select: { id: true, status: true, stoppedAt: true } });
  return { deployment: updated, jobStatus: "running", finalCheckpoint: null, routingSwitch: done };
}

/** A switch as the audit records it: its checkpoint, the source offsets at the boundary, the modes before and after. */
export function switchForAudit(s: RoutingSwitch | null) {
  return s ? { checkpointId: s.checkpointId, sources: s.sources, before: s.before, after: s.after } : null;
}

/**
 * A rule job's figures as one branch sees them: its own nodes under the version's node ids (the job
 * namespaces them `v<N>-<id>`), the shared sources as they are, the other branches left out, so a
 * deployment's live canvas draws on the version's graph.
 */
export function branchNodes<T>(runnerJobId: string, versionNumber: number, nodes: Record<string, T>): Record<string, T> {
  if (!runnerJobId.startsWith(RULE_JOB_PREFIX)) return nodes;
  const own = `v${versionNumber}-`;
  const out: Record<string, T> = {};
  for (const [id, value] of Object.entries(nodes)) {
    if (id.startsWith(own)) out[id.slice(own.length)] = value;
    else if (!/^v\d+-/.test(id)) out[id] = value;
  }
  return out;
}

/** The Skew panel's operators as one branch sees them: its own keyed nodes under the version's ids (as branchNodes). */
export function branchSkew<T extends { node: string }>(runnerJobId: string, versionNumber: number, skew: readonly T[]): T[] {
  const own = branchNodes(runnerJobId, versionNumber, Object.fromEntries(skew.map((s) => [s.node, s])));
  return Object.entries(own).map(([node, s]) => ({ ...s, node }));
}

/** The id the rule job gives a node of the version: `v<N>-<id>`, or the id itself for a source the versions share. */
export async function jobNodeId(runnerUrl: string, runnerJobId: string, versionNumber: number, nodeId: string): Promise<string> {
  if (!runnerJobId.startsWith(RULE_JOB_PREFIX)) return nodeId;
  const own = `v${versionNumber}-${nodeId}`;
  const view = await getRuleJob(runnerUrl, runnerJobId);
  const nodes = z.record(z.string(), z.unknown()).safeParse(view.nodes);
  return nodes.success && own in nodes.data ? own : nodeId;
}
