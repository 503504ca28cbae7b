// Backtests: a version replayed over a recorded range at full speed in bounded mode, as its own job
// (a `test` deployment) that writes its alerts to `<rule>.backtest.<id>` and ends when its range is
// read (the runner then records the deployment finished with its counts). The range is a Kafka topic
// between two offsets or two instants (the bounded Kafka source resolves them), or a file on the
// runner (uploaded through backtests-files.ts, or already there). The comparison (comparison.ts) reads the backtest's topic like any other side.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import { validatePipeline, type PipelineDocument, type PipelineNode } from "@keyflow/operators";
import type { SessionUser } from "../auth/roles";
import { notFound, pipelineRejected } from "../errors";
import { fromJsonColumn } from "../json";
import { getJob, RunnerError, RunnerJobNotFoundError, RunnerRefusedError, submitJob } from "../runner-client";

const offsets = z.record(z.string().regex(/^\d+$/, "partition numbers are non-negative integers"), z.number().int().min(0));

/** Where a Kafka range starts and ends: offsets per partition, an instant (epoch ms), or the topic's own start/end. */
const rangeStart = z.discriminatedUnion("by", [z.object({ by: z.literal("earliest") }), z.object({ by: z.literal("offsets"), offsets }), z.object({ by: z.literal("time"), ts: z.number().int().min(0) })]);
const rangeEnd = z.discriminatedUnion("by", [z.object({ by: z.literal("latest") }), z.object({ by: z.literal("offsets"), offsets }), z.object({ by: z.literal("time"), ts: z.number().int().min(0) })]);

export const backtestRangeSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("kafka"),
    /** The recorded topic; default: the version's own source topic. */
    topic: z.string().trim().min(1).optional(),
    from: rangeStart,
    /** "latest": the end offsets when the backtest starts (a recorded range does not grow while it runs). */
    to: rangeEnd,
  }),
  z.object({
    kind: z.literal("file"),
    /** A JSON-lines file on the runner's machine, relative to and inside its KEYFLOW_DATA_DIR (the validator refuses others); an upload's is `uploads/…`. */
    path: z.string().trim().min(1),
    /** The uploaded file's own name, shown beside the path (backtests-files.ts). */
    name: z.string().max(200).optional(),
  }),
]);
export type BacktestRange = z.infer<typeof backtestRangeSchema>;

/** `<rule>.backtest.<id>`, or `<rule>.backtest.<id>.<node>` when the rule has several Kafka sinks. */
export function backtestTopic(rule: string, backtestId: string, nodeId: string, kafkaSinks: number): string {
  return kafkaSinks === 1 ? `${rule}.backtest.${backtestId}` : `${rule}.backtest.${backtestId}.${nodeId}`;
}

const RANGE_PARAMS = ["startOffsets", "startTime", "endOffsets", "endTime"] as const;

function kafkaRangeParams(range: Extract<BacktestRange, { kind: "kafka" }>): Record<string, unknown> {
  const out: Record<string, unknown> = { bounded: true, startFrom: "earliest" };
  if (range.from.by === "offsets") out.startOffsets = range.from.offsets;
  if (range.from.by === "time") out.startTime = range.from.ts;
  if (range.to.by === "offsets") out.endOffsets = range.to.offsets;
  if (range.to.by === "time") out.endTime = range.to.ts;
  return out;
}

/**
 * The version's graph as a backtest runs it: its sources read the range (bounded), its Kafka sinks
 * write the backtest's own topic, file sinks a folder of their own, dead letters `<dlq>.backtest.<id>`.
 * Nothing it writes can reach the enforcement topic or a live deployment's output.
 */
export function backtestPipeline(graph: PipelineDocument, range: BacktestRange, backtestId: string): PipelineDocument {
  const sources = graph.nodes.filter((n) => n.type.startsWith("source."));
  const kafkaSources = sources.filter((n) => n.type === "source.kafka");
  if (range.kind === "kafka" && kafkaSources.length === 0) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `"${graph.name}" has no Kafka source: a Kafka range cannot be replayed through it (use a file range)` });
  }
  if (range.kind === "kafka" && range.topic !== undefined && kafkaSources.length > 1) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `"${graph.name}" has ${kafkaSources.length} Kafka sources (${kafkaSources.map((n) => n.id).join(", ")}): a range on one topic cannot say which it replaces` });
  }
  if (range.kind === "file" && sources.length !== 1) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `"${graph.name}" has ${sources.length} sources: a file range replaces exactly one` });
  }
  const kafkaSinks = graph.nodes.filter((n) => n.type === "sink.kafka").length;
  const rewrite = (node: PipelineNode): PipelineNode => {
    const params = node.params as Record<string, unknown>;
    if (node.type === "source.kafka" && range.kind === "kafka") {
      const kept = Object.fromEntries(Object.entries(params).filter(([k]) => !(RANGE_PARAMS as readonly string[]).includes(k)));
      return { ...node, params: { ...kept, ...(range.topic !== undefined ? { topic: range.topic } : {}), ...kafkaRangeParams(range) } };
    }
    if (node.type.startsWith("source.") && range.kind === "file") {
      // Event time as the live source reads it; the file replaces only where the records come from.
      const carried = Object.fromEntries(Object.entries(params).filter(([k]) => ["timestampField", "maxOutOfOrdernessMs", "fields"].includes(k)));
      return { ...node, type: "source.file", params: { ...carried, path: range.path } };
    }
    if (node.type === "sink.kafka") return { ...node, params: { ...params, topic: backtestTopic(graph.name, backtestId, node.id, kafkaSinks) } };
    if (node.type === "sink.file") return { ...node, params: { ...params, path: `backtests/${backtestId}/${node.id}.jsonl` } };
    return node;
  };
  return {
    ...graph,
    settings: { ...graph.settings, deadLetterTopic: `${graph.settings.deadLetterTopic ?? `${graph.name}.dlq`}.backtest.${backtestId}` },
    nodes: graph.nodes.map(rewrite),
  };
}

/** Its alert topics (one per Kafka sink), from the pipeline as it runs. */
export function backtestAlertTopics(pipeline: PipelineDocument): string[] {
  return pipeline.nodes.filter((n) => n.type === "sink.kafka").map((n) => String((n.params as { topic?: unknown }).topic));
}

/**
 * Starts a backtest of `versionId` over `range`: records it (and audits it) in one transaction,
 * then hands the job to the runner as a `test` deployment. A runner refusal marks the deployment
 * failed with the reason; the backtest stays, so what was tried is on record.
 */
export async function startBacktest(prisma: PrismaClient, runnerUrl: string, user: SessionUser, input: { versionId: string; range: BacktestRange }) {
  const version = await prisma.pipelineVersion.findUnique({ where: { id: input.versionId }, select: { id: true, number: true, pipelineId: true, graph: true, pipeline: { select: { name: true } } } });
  if (!version) throw notFound("version", input.versionId);
  const graph = fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`);
  // The id names the topics, so it is chosen before the row exists: the row's own cuid, then the graph.
  const backtest = await prisma.$transaction(async (tx) => {
    const row = await tx.backtest.create({ data: { pipelineId: version.pipelineId, versionId: version.id, range: input.range, alertTopic: "", createdBy: user.email }, select: { id: true } });
    const pipeline = backtestPipeline(graph, input.range, row.id);
    const result = validatePipeline(pipeline);
    if (!result.ok) throw pipelineRejected(`cannot backtest version ${version.number}`, result.issues);
    const topics = backtestAlertTopics(pipeline);
    const deployment = await tx.deployment.create({ data: { pipelineId: version.pipelineId, versionId: version.id, mode: "test", status: "pending" }, select: { id: true } });
    const saved = await tx.backtest.update({ where: { id: row.id }, data: { alertTopic: topics.join(","), deploymentId: deployment.id }, select: { id: true, deploymentId: true, alertTopic: true } });
    await appendAuditEvent(tx, {
      actor: user.email,
      action: "backtest",
      subjectType: "backtest",
      subjectId: row.id,
      details: { pipelineId: version.pipelineId, versionId: version.id, number: version.number, deploymentId: deployment.id, range: input.range, alertTopics: topics },
    });
    return { ...saved, deploymentId: deployment.id, pipeline };
  });
  try {
    const job = await submitJob(runnerUrl, { deploymentId: backtest.deploymentId, pipeline: backtest.pipeline });
    await prisma.deployment.update({ where: { id: backtest.deploymentId }, data: { runnerJobId: job.jobId, status: job.status === "finished" ? "finished" : job.status === "failed" ? "failed" : "running" } });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    await prisma.deployment.update({ where: { id: backtest.deploymentId }, data: { status: "failed", failureReason: reason, stoppedAt: new Date() } });
    if (error instanceof RunnerRefusedError) throw new TRPCError({ code: "BAD_REQUEST", message: `backtest ${backtest.id} refused by the runner: ${reason}`, cause: error });
    if (error instanceof RunnerError) throw new TRPCError({ code: "BAD_GATEWAY", message: `backtest ${backtest.id} could not start: ${reason}`, cause: error });
    throw error;
  }
  return getBacktest(prisma, runnerUrl, backtest.id);
}

const backtestSelect = {
  id: true,
  pipelineId: true,
  versionId: true,
  range: true,
  alertTopic: true,
  createdBy: true,
  createdAt: true,
  version: { select: { number: true } },
  deployment: { select: { id: true, status: true, runnerJobId: true, failureReason: true, stoppedAt: true, finalMetrics: true } },
} as const;

/** The parts of the runner's job view that say how far a backtest has come. */
const jobProgressSchema = z.looseObject({
  status: z.string(),
  restarts: z.number().optional(),
  failure: z.string().nullable().optional(),
  nodes: z.record(z.string(), z.looseObject({ type: z.string(), recordsIn: z.number(), recordsOut: z.number(), deadLetters: z.number() })).optional(),
  sources: z.record(z.string(), z.object({ input: z.string(), lag: z.record(z.string(), z.number()) })).optional(),
});
const finalMetricsSchema = z.object({ restarts: z.number(), nodes: z.record(z.string(), z.object({ type: z.string(), recordsIn: z.number(), recordsOut: z.number(), deadLetters: z.number() })) });

export interface BacktestCounts {
  /** Records the sources handed to the job (dead letters included). */
  records: number;
  /** Records still to read in the range (Kafka lag to the range's end); 0 once finished. */
  remaining: number | null;
  /** Records into the Kafka and file sinks. */
  alerts: number;
  deadLetters: number;
}

function countsOf(nodes: Record<string, { type: string; recordsIn: number; recordsOut: number; deadLetters: number }>, remaining: number | null): BacktestCounts {
  let records = 0;
  let alerts = 0;
  let deadLetters = 0;
  for (const n of Object.values(nodes)) {
    if (n.type.startsWith("source.")) records += n.recordsOut + n.deadLetters;
    if (n.type.startsWith("sink.")) alerts += n.recordsIn;
    deadLetters += n.deadLetters;
  }
  return { records, remaining, alerts, deadLetters };
}

export interface BacktestView {
  id: string;
  pipelineId: string;
  versionId: string;
  versionNumber: number;
  range: BacktestRange | null;
  alertTopics: string[];
  createdBy: string;
  createdAt: Date;
  deploymentId: string | null;
  /** Its deployment's status: pending, running, finished (the range is read), failed, stopped. */
  status: string;
  /** The runner's own word while it runs (starting, running, restarting). */
  liveStatus: string | null;
  failure: string | null;
  finishedAt: Date | null;
  counts: BacktestCounts | null;
}

/** A backtest with its status (its deployment's), and its counts: final ones once finished, the runner's live ones while it runs. */
export async function getBacktest(prisma: PrismaClient, runnerUrl: string, backtestId: string): Promise<BacktestView> {
  const row = await prisma.backtest.findUnique({ where: { id: backtestId }, select: backtestSelect });
  if (!row) throw notFound("backtest", backtestId);
  const status = row.deployment?.status ?? "stopped";
  let counts: BacktestCounts | null = null;
  let liveStatus: string | null = null;
  const final = finalMetricsSchema.safeParse(row.deployment?.finalMetrics);
  if (final.success) counts = countsOf(final.data.nodes, status === "finished" ? 0 : null);
  else if (row.deployment?.runnerJobId && (status === "running" || status === "pending")) {
    // Live: the runner's view of the job. A runner that forgot it (restarted without it) means the
    // backtest will never end: it is recorded failed, saying so. Other errors: no counts this time.
    const deploymentId = row.deployment.id;
    const job = await getJob(runnerUrl, row.deployment.runnerJobId).catch(async (error: unknown) => {
      if (error instanceof RunnerJobNotFoundError) {
        await prisma.deployment.update({ where: { id: deploymentId }, data: { status: "failed", failureReason: `the runner no longer has job ${row.deployment?.runnerJobId ?? "?"} (it restarted?): run the backtest again`, stoppedAt: new Date() } });
      }
      return null;
    });
    const parsed = jobProgressSchema.safeParse(job);
    if (parsed.success) {
      liveStatus = parsed.data.status;
      const lag = Object.values(parsed.data.sources ?? {}).flatMap((s) => Object.values(s.lag));
      const nodes = parsed.data.nodes ?? {};
      counts = countsOf(nodes, lag.length > 0 ? lag.reduce((a, b) => a + b, 0) : null);
      // A runner without DATABASE_URL cannot record the end itself: what it says is recorded here.
      if (liveStatus === "failed" && row.deployment) {
        await prisma.deployment.update({ where: { id: row.deployment.id }, data: { status: "failed", failureReason: String(parsed.data.failure ?? "the job failed"), stoppedAt: new Date() } });
        return getBacktest(prisma, runnerUrl, backtestId);
      }
      if (liveStatus === "finished" && row.deployment) {
        const finalMetrics = { restarts: Number(parsed.data.restarts ?? 0), nodes: Object.fromEntries(Object.entries(nodes).map(([id, n]) => [id, { type: n.type, recordsIn: n.recordsIn, recordsOut: n.recordsOut, deadLetters: n.deadLetters }])) };
        await prisma.deployment.update({ where: { id: row.deployment.id }, data: { status: "finished", stoppedAt: new Date(), finalMetrics } });
        return getBacktest(prisma, runnerUrl, backtestId);
      }
    }
  }
  const range = backtestRangeSchema.safeParse(row.range);
  return {
    id: row.id,
    pipelineId: row.pipelineId,
    versionId: row.versionId,
    versionNumber: row.version.number,
    range: range.success ? range.data : null,
    alertTopics: row.alertTopic.split(",").filter(Boolean),
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    deploymentId: row.deployment?.id ?? null,
    status,
    liveStatus,
    failure: row.deployment?.failureReason ?? null,
    finishedAt: status === "finished" ? (row.deployment?.stoppedAt ?? null) : null,
    counts,
  };
}

/** The pipeline's newest backtests, newest first. */
export async function listBacktests(prisma: PrismaClient, runnerUrl: string, pipelineId: string): Promise<BacktestView[]> {
  const rows = await prisma.backtest.findMany({ where: { pipelineId }, orderBy: { createdAt: "desc" }, take: 50, select: { id: true } });
  const out: BacktestView[] = [];
  for (const r of rows) out.push(await getBacktest(prisma, runnerUrl, r.id));
  return out;
}

/** Refuses a comparison of two backtests over different ranges: their counts would not mean anything side by side. */
export function assertSameRange(a: { id: string; range: unknown }, b: { id: string; range: unknown }): void {
  if (JSON.stringify(a.range) !== JSON.stringify(b.range)) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `backtests ${a.id} and ${b.id} replayed different ranges (${JSON.stringify(a.range)} and ${JSON.stringify(b.range)}): compare backtests over the same range` });
  }
}
