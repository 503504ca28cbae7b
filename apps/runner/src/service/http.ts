// The runner's HTTP API (node:http, no framework): health, Prometheus metrics, and job control for
// the web app. Request bodies are checked with zod and the shared pipeline validator; a 400 lists
// every problem, naming the node.
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Registry } from "prom-client";
import { z } from "zod";
import type { RunnerEnv } from "../env";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import { checkPipeline } from "../pipeline/load";
import { confinePath, PathOutsideFolderError } from "../io/confine";
import { OutputConflictError } from "../job/outputs";
import { DryRunRequestError, dryRunRequestSchema, runDryRun } from "./dry-run";
import { DeployConflictError, JobStateError, type JobManager, type JobView, type ManagedJob } from "./jobs";
import path from "node:path";
import { DirectoryCheckpointStore, readCheckpointFolder } from "../job/checkpoints";
import { checkRestore } from "../job/restore-compat";
import { keyStateResponseSchema, type KeyStateResponse } from "../job/queryable-state";
import { nodeTaskTimes } from "../ops/task-times";
import type { SourceFigures } from "../ops/source-partitions";
import type { OperatorSkew } from "../ops/skew";
import type { CheckpointProgress, FailedCheckpoint } from "../exec/parallel";
import { branchModeSchema, composeRuleJob, inVersionTerms } from "../job/rule-job";
import { RoutingError } from "../job/routing";
import { openUpload, receiveUpload, UploadRefusedError, uploadLimit } from "./uploads";

const MAX_BODY_BYTES = 5 * 1024 * 1024;
/** A dry run carries its sample in the body. */
const MAX_DRY_RUN_BODY_BYTES = 32 * 1024 * 1024;

export const deployRequestSchema = z.object({
  deploymentId: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "deploymentId has letters, digits, '.', '_' and '-' (it names the job's checkpoint folder and Kafka ids)"),
  pipeline: z.unknown(),
  /** A checkpoint or savepoint folder to start from (a restore, or the second half of a rescale). */
  restoreFrom: z.string().min(1).optional(),
  /** Overrides the pipeline's settings.parallelism (a rescale). */
  parallelism: z.number().int().min(1).optional(),
  /** Drop the state of nodes the pipeline no longer has instead of refusing the restore. */
  allowNonRestoredState: z.boolean().optional(),
});

/** A rule job: the versions of one rule as branches of one job (../job/rule-job.ts). */
export const ruleDeployRequestSchema = deployRequestSchema.omit({ deploymentId: true, pipeline: true }).extend({
  jobId: deployRequestSchema.shape.deploymentId,
  rule: z.unknown(),
});

/** A routing switch: the versions whose mode changes (the others keep theirs). */
export const routingRequestSchema = z.object({ modes: z.record(z.string().regex(/^\d+$/, "a version number"), branchModeSchema) });

/** Does a rule job of these versions restore from the running job's newest checkpoint (or from `restoreFrom`)? */
export const ruleCheckRequestSchema = z.object({ jobId: z.string().min(1).optional(), restoreFrom: z.string().min(1).optional(), rule: z.unknown(), allowNonRestoredState: z.boolean().optional() });

export const savepointRequestSchema = z.object({
  /** Folder under which the savepoint folder is created; default `<checkpoint root>/savepoints/<job>`. */
  dir: z.string().min(1).optional(),
});

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body, (_k, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? null : v));
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(text + "\n");
}

async function readJson(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  return parseJson(await readBody(req, maxBytes));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `the request body is not JSON: ${errorMessage(err)}`);
  }
}

/** The body as text, refused (413) past `maxBytes`: at once when Content-Length says so, else as it streams in. */
async function readBody(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<string> {
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > maxBytes) throw new HttpError(413, `request body larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buf.length;
    if (size > maxBytes) throw new HttpError(413, `request body larger than ${maxBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The canvas's live figures of one job: totals and per-second rates per node. */
export interface LiveSnapshot {
  jobId: string;
  pipeline: string;
  status: string;
  time: string;
  deadLetters: number;
  lastCheckpointId: number | null;
  nodes: Record<
    string,
    {
      type: string;
      recordsIn: number;
      recordsOut: number;
      recordsInPerSecond: number;
      recordsOutPerSecond: number;
      late: number;
      deadLetters: number;
      keys: number;
      timers: number;
      stateBytes: number;
      /** Epoch ms; null before the first record (-Inf) and after the end of input (+Inf). */
      watermark: number | null;
      /** Where the node's task spends its time (Flink's task metrics), ms per second. */
      busyTimeMsPerSecond?: number;
      backPressuredTimeMsPerSecond?: number;
      idleTimeMsPerSecond?: number;
      queuedRecords?: number;
      /** Sinks: the records-per-second cap set through POST /jobs/:id/nodes/:node/throttle (null: none). */
      throttleRecordsPerSecond?: number | null;
    }
  >;
  /** Parallel jobs: each task and subtask, its nodes, where its time goes and the records per node. */
  subtasks: Array<{
    task: string;
    subtask: number;
    nodes: string[];
    busyTimeMsPerSecond: number;
    backPressuredTimeMsPerSecond: number;
    idleTimeMsPerSecond: number;
    queuedRecords: number;
    recordsIn: Record<string, number>;
  }>;
  /** Kafka consumer lag per source node and partition. */
  sources: JobView["sources"];
  /** Per source node and partition: records, offsets, idleness, lag and (parsed-value sources) watermark. */
  sourcePartitions: Record<string, SourceFigures>;
  /** Parallel jobs: the checkpoint in flight with each task's acknowledgement. */
  checkpointInProgress: CheckpointProgress | null;
  /** Parallel jobs: the newest aborted checkpoints with their reason, newest first. */
  failedCheckpoints: FailedCheckpoint[];
  /** Parallel jobs: records and hottest keys per keyed operator and subtask. */
  skew: OperatorSkew[];
}

function liveSnapshot(job: ManagedJob, previous: { at: number; snap: LiveSnapshot } | undefined, at: number): LiveSnapshot {
  const v = job.view();
  const dt = previous ? (at - previous.at) / 1000 : 0;
  const nodes: LiveSnapshot["nodes"] = {};
  const subtasks = job.subtaskMetrics();
  const times = nodeTaskTimes(Object.keys(v.nodes), { engine: job.engineTimes(), subtasks, sinks: job.ops.sinkTimes() });
  const throttles = job.ops.throttleSettings();
  for (const [id, m] of Object.entries(v.nodes)) {
    const before = previous?.snap.nodes[id];
    const rate = (now: number, then: number | undefined) => (dt > 0 && then !== undefined ? Math.max(0, Math.round(((now - then) / dt) * 10) / 10) : 0);
    nodes[id] = {
      type: m.type,
      recordsIn: m.recordsIn,
      recordsOut: m.recordsOut,
      recordsInPerSecond: rate(m.recordsIn, before?.recordsIn),
      recordsOutPerSecond: rate(m.recordsOut, before?.recordsOut),
      late: m.late,
      deadLetters: m.deadLetters,
      keys: m.keys,
      timers: m.timers,
      stateBytes: m.stateBytes,
      watermark: Number.isFinite(m.watermark) ? m.watermark : null,
      ...times[id],
      ...(id in throttles ? { throttleRecordsPerSecond: throttles[id] ?? null } : {}),
    };
  }
  return {
    jobId: v.jobId,
    pipeline: v.pipeline,
    status: v.status,
    time: new Date(at).toISOString(),
    deadLetters: v.deadLetters,
    lastCheckpointId: v.lastCheckpoint?.id ?? null,
    nodes,
    subtasks: subtasks.map((t) => ({
      task: t.task,
      subtask: t.subtask,
      nodes: t.nodes,
      busyTimeMsPerSecond: t.busyTimeMsPerSecond,
      backPressuredTimeMsPerSecond: t.backPressuredTimeMsPerSecond,
      idleTimeMsPerSecond: t.idleTimeMsPerSecond,
      queuedRecords: t.queuedRecords,
      recordsIn: Object.fromEntries(Object.entries(t.metrics).map(([id, m]) => [id, m.recordsIn])),
    })),
    sources: v.sources,
    sourcePartitions: job.ops.sourceFigures(),
    checkpointInProgress: job.parallelExecution?.checkpointProgress() ?? sinkCommitProgress(job),
    failedCheckpoints: [...(job.parallelExecution?.failedCheckpoints ?? [])].reverse().slice(0, 10),
    skew: job.parallelExecution?.skew.report() ?? [],
  };
}

/** A single-threaded job's checkpoint in flight: the snapshot is taken; each sink prepared (acknowledged) or not yet. */
function sinkCommitProgress(job: ManagedJob): CheckpointProgress | null {
  const c = job.ops.sinkCommitProgress();
  if (!c) return null;
  return {
    id: c.id,
    triggeredAt: c.since,
    tasks: [
      { task: "source", subtask: 0, acknowledged: true },
      ...Object.entries(c.sinks).map(([node, phase]) => ({ task: "sink" as const, subtask: 0, node, acknowledged: phase === "prepared" || phase === "committed" })),
    ],
  };
}

/** POST /jobs/:id/nodes/:node/throttle: a records-per-second cap on a sink, or null to lift it. */
export const throttleRequestSchema = z.object({
  recordsPerSecond: z.number().min(0.1, "recordsPerSecond is at least 0.1 (or null to lift the throttle)").nullable(),
});

export interface RunnerHttpOptions {
  jobs: JobManager;
  registry: Registry;
  env: RunnerEnv;
  log: Logger;
  /** Milliseconds between live snapshots on the metrics stream. */
  streamIntervalMs?: number;
}

export function createRunnerServer(o: RunnerHttpOptions): Server {
  const { jobs, registry, env, log } = o;
  const streamIntervalMs = o.streamIntervalMs ?? 1_000;
  const token = env.runnerToken;
  if (token === undefined) throw new Error("the runner's API needs a bearer token (createRunnerService generates one when KEYFLOW_RUNNER_TOKEN is unset)");
  const hosts = allowedHosts(env);
  const streams = new StreamSlots(env.maxStreams ?? 256, env.maxStreamsPerClient ?? 32);

  const routes: { method: string; pattern: RegExp; handle: (req: IncomingMessage, res: ServerResponse, params: string[]) => Promise<void> | void }[] = [
    {
      method: "GET",
      pattern: /^\/healthz$/,
      handle: (_req, res) => send(res, 200, { status: "ok", jobs: jobs.list().length }),
    },
    {
      method: "GET",
      pattern: /^\/metrics$/,
      handle: async (_req, res) => {
        const text = await registry.metrics();
        res.writeHead(200, { "content-type": registry.contentType });
        res.end(text);
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs$/,
      handle: (_req, res) => send(res, 200, { jobs: jobs.list().map((j) => j.view()) }),
    },
    {
      method: "POST",
      pattern: /^\/jobs$/,
      handle: async (req, res) => {
        const body = deployRequestSchema.safeParse(await readJson(req));
        if (!body.success) {
          throw new HttpError(400, "invalid deploy request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        }
        const { deploymentId, pipeline, restoreFrom, parallelism, allowNonRestoredState } = body.data;
        const checked = checkPipeline(pipeline, `deployment ${deploymentId}`, env.dataDir);
        if (!checked.ok) throw new HttpError(400, "the pipeline is invalid", { issues: checked.problems });
        const doc = structuredClone(checked.doc);
        if (parallelism !== undefined) {
          if (parallelism > doc.settings.maxParallelism) throw new HttpError(400, `parallelism ${parallelism} is above the pipeline's maxParallelism ${doc.settings.maxParallelism}`);
          doc.settings.parallelism = parallelism;
        }
        const restoreFolder = restoreFrom === undefined ? undefined : inCheckpointRoot(restoreFrom, "restoreFrom");
        if (restoreFolder !== undefined) {
          // Refused here, with the nodes named, rather than by a job that then fails and restarts.
          const check = await restoreCheck(restoreFolder, doc, allowNonRestoredState ?? false, `"${restoreFrom}"`);
          if (check.problems.length > 0) throw new HttpError(400, `the state in "${restoreFrom}" does not fit the pipeline`, { issues: check.problems });
        } else {
          await ownCheckpointCheck(deploymentId, doc, allowNonRestoredState ?? false, (p) => p);
        }
        let job: ManagedJob;
        try {
          job = jobs.deploy(deploymentId, doc, {
            ...(restoreFolder !== undefined ? { restoreFrom: restoreFolder } : {}),
            ...(allowNonRestoredState ? { allowNonRestoredState } : {}),
          });
        } catch (err) {
          throw deployError(err);
        }
        send(res, 201, { ...job.view(), warnings: checked.warnings });
      },
    },
    {
      method: "POST",
      pattern: /^\/rule-jobs$/,
      handle: async (req, res) => {
        const body = ruleDeployRequestSchema.safeParse(await readJson(req));
        if (!body.success) throw new HttpError(400, "invalid rule job request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        const { jobId, rule, restoreFrom, parallelism, allowNonRestoredState } = body.data;
        const composed = composeRuleJob(rule, env.dataDir);
        if (!composed.ok) throw new HttpError(400, "the rule job is invalid", { issues: composed.problems });
        const doc = composed.job.doc;
        if (parallelism !== undefined) {
          if (parallelism > doc.settings.maxParallelism) throw new HttpError(400, `parallelism ${parallelism} is above the rule's maxParallelism ${doc.settings.maxParallelism}`);
          doc.settings.parallelism = parallelism;
        }
        const restoreFolder = restoreFrom === undefined ? undefined : inCheckpointRoot(restoreFrom, "restoreFrom");
        if (restoreFolder !== undefined) {
          const check = await restoreCheck(restoreFolder, doc, allowNonRestoredState ?? false);
          if (check.problems.length > 0) throw new HttpError(400, `the state in "${restoreFrom}" does not fit the pipeline of rule job "${jobId}"`, { issues: check.problems.map(inVersionTerms) });
        } else {
          await ownCheckpointCheck(jobId, doc, allowNonRestoredState ?? false, inVersionTerms);
        }
        let job: ManagedJob;
        try {
          job = jobs.deploy(jobId, doc, { ...(restoreFolder !== undefined ? { restoreFrom: restoreFolder } : {}), ...(allowNonRestoredState ? { allowNonRestoredState } : {}) }, composed.job);
        } catch (err) {
          throw deployError(err);
        }
        send(res, 201, { ...job.view(), warnings: composed.warnings, nodeIds: Object.fromEntries([...composed.job.nodeIds].map(([v, ids]) => [String(v), Object.fromEntries(ids)])) });
      },
    },
    {
      method: "POST",
      pattern: /^\/rule-jobs\/check$/,
      handle: async (req, res) => {
        const body = ruleCheckRequestSchema.safeParse(await readJson(req));
        if (!body.success) throw new HttpError(400, "invalid rule check request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        const composed = composeRuleJob(body.data.rule, env.dataDir);
        if (!composed.ok) throw new HttpError(400, "the rule job is invalid", { issues: composed.problems });
        const job = body.data.restoreFrom === undefined && body.data.jobId !== undefined ? requireJob(body.data.jobId) : undefined;
        // A running job prunes old checkpoints: one pruned while read is tried again with the newest.
        for (let attempt = 1; ; attempt++) {
          const from = body.data.restoreFrom !== undefined ? inCheckpointRoot(body.data.restoreFrom, "restoreFrom") : job?.lastCheckpointPath;
          if (from === undefined) {
            send(res, 200, { checkpoint: null, compatible: true, problems: [], dropped: [], note: "no checkpoint to restore from: the rule job would start empty" });
            return;
          }
          try {
            const check = await restoreCheck(from, composed.job.doc, body.data.allowNonRestoredState ?? false);
                send(res, 200, { checkpoint: from, compatible: check.problems.length === 0, problems: check.problems.map(inVersionTerms), dropped: check.dropped });
            return;
          } catch (err) {
            if (job === undefined || attempt >= 3 || from === job.lastCheckpointPath) throw err;
          }
        }
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)\/routing$/,
      handle: (_req, res, [id]) => {
        const job = requireJob(id);
        if (!job.routing) throw new HttpError(404, `job "${job.deploymentId}" is not a rule job: it has no routing`);
        send(res, 200, { jobId: job.deploymentId, ...job.routing.view() });
      },
    },
    {
      method: "POST",
      pattern: /^\/jobs\/([^/]+)\/routing$/,
      handle: async (req, res, [id]) => {
        const job = requireJob(id);
        const body = routingRequestSchema.safeParse(await readJson(req));
        if (!body.success) throw new HttpError(400, "invalid routing request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        try {
          const done = await job.switchRouting(body.data.modes);
          log.info(`job ${job.deploymentId}: routing ${JSON.stringify(done.before)} -> ${JSON.stringify(done.after)} at checkpoint ${done.checkpointId}`);
          send(res, 200, { jobId: job.deploymentId, ...done });
        } catch (err) {
          if (err instanceof JobStateError) throw new HttpError(409, err.message);
          if (err instanceof RoutingError) throw new HttpError(409, err.message);
          throw err;
        }
      },
    },
    {
      // A recorded JSON-lines file for a backtest (./uploads.ts): stored under the data directory, named by the runner.
      method: "POST",
      pattern: /^\/files$/,
      handle: async (req, res) => {
        const limit = uploadLimit();
        if (Number(req.headers["content-length"] ?? "0") > limit) throw new HttpError(413, `the file is larger than the runner's upload limit of ${limit} bytes (KEYFLOW_UPLOAD_MAX_BYTES)`);
        try {
          const stored = await receiveUpload(req, env.dataDir, limit);
          log.info(`stored upload ${stored.path}: ${stored.records} records, ${stored.bytes} bytes`);
          send(res, 201, stored);
        } catch (err) {
          if (!(err instanceof UploadRefusedError)) throw err;
          throw new HttpError(err.status, err.message);
        }
      },
    },
    {
      // A stored upload read back, for the comparison of a file backtest (its labels and its records).
      method: "GET",
      pattern: /^\/files\/uploads\/([^/]+)$/,
      handle: async (_req, res, [name]) => {
        const upload = await openUpload(env.dataDir, name ?? "");
        if (upload === null) throw new HttpError(404, `no uploaded file "${name}" on this runner`);
        res.writeHead(200, { "content-type": "application/x-ndjson", "content-length": upload.bytes });
        upload.stream.pipe(res);
        await new Promise<void>((resolve, reject) => {
          upload.stream.on("error", reject);
          res.on("finish", resolve);
          res.on("close", resolve);
        });
      },
    },
    {
      method: "POST",
      pattern: /^\/dry-run$/,
      handle: async (req, res) => {
        const body = dryRunRequestSchema.safeParse(await readJson(req, MAX_DRY_RUN_BODY_BYTES));
        if (!body.success) {
          throw new HttpError(400, "invalid dry-run request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        }
        const checked = checkPipeline(body.data.pipeline, "dry run", env.dataDir);
        if (!checked.ok) throw new HttpError(400, "the pipeline is invalid", { issues: checked.problems });
        try {
          send(res, 200, await runDryRun(checked.doc, body.data, { env, log: log.child("dry-run") }));
        } catch (err) {
          if (err instanceof DryRunRequestError) throw new HttpError(err.status, err.message);
          throw err;
        }
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)$/,
      handle: (_req, res, [id]) => send(res, 200, requireJob(id).view()),
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)\/checkpoints$/,
      handle: (_req, res, [id]) => {
        const job = requireJob(id);
        const checkpoints = job.checkpoints().map((c) => ({ ...c, triggeredAtIso: new Date(c.triggeredAt).toISOString(), completedAtIso: new Date(c.completedAt).toISOString() }));
        // `failed`: checkpoints of this run that failed or were aborted, with their reason, newest first.
        const failed = job.failedCheckpoints().map((f) => ({ ...f, status: "failed" as const, triggeredAtIso: new Date(f.triggeredAt).toISOString(), failedAtIso: new Date(f.failedAt).toISOString() }));
        send(res, 200, { jobId: job.deploymentId, checkpointDir: job.checkpointDir, checkpoints: [...checkpoints].reverse(), failed: [...failed].reverse() });
      },
    },
    {
      method: "DELETE",
      pattern: /^\/jobs\/([^/]+)$/,
      handle: async (_req, res, [id]) => {
        requireJob(id);
        const job = await jobs.stop(id ?? "");
        send(res, 200, job?.view());
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)\/state$/,
      handle: async (req, res, [id]) => {
        const job = requireJob(id);
        const q = new URL(req.url ?? "/", "http://runner").searchParams;
        const nodeId = q.get("node");
        const key = q.get("key");
        if (!nodeId || key === null) throw new HttpError(400, "GET /jobs/:id/state needs ?node=<nodeId>&key=<key>");
        const node = job.doc.nodes.find((n) => n.id === nodeId);
        if (!node) throw new HttpError(404, `job "${job.deploymentId}" has no node "${nodeId}"`);
        if (!job.active) throw new HttpError(404, `job "${job.deploymentId}" is ${job.status}: its state can be read only while it runs`);
        const answer = await job.queryState(nodeId, key);
        const empty = answer !== undefined && answer.view.state.length === 0 && answer.view.timers.eventTime.length === 0 && answer.view.timers.processingTime.length === 0;
        if (!answer || empty) throw new HttpError(404, `node "${nodeId}" (${node.type}) of job "${job.deploymentId}" holds no state or timers for key "${key}"`);
        const v = answer.view;
        const body: KeyStateResponse = {
          jobId: job.deploymentId,
          nodeId,
          nodeType: node.type,
          key: v.key,
          subtask: { task: answer.task, index: answer.index },
          state: v.state,
          timers: v.timers,
          watermark: Number.isFinite(v.watermark) ? v.watermark : null,
        };
        send(res, 200, keyStateResponseSchema.parse(body));
      },
    },
    {
      method: "POST",
      pattern: /^\/jobs\/([^/]+)\/savepoint$/,
      handle: async (req, res, [id]) => {
        const job = requireJob(id);
        const root = await savepointRoot(req, job);
        try {
          const savepoint = await job.savepoint(root);
          log.info(`job ${job.deploymentId}: savepoint ${savepoint}`);
          send(res, 200, { jobId: job.deploymentId, path: savepoint });
        } catch (err) {
          if (err instanceof JobStateError) throw new HttpError(409, err.message);
          throw err;
        }
      },
    },
    {
      method: "POST",
      pattern: /^\/jobs\/([^/]+)\/stop$/,
      handle: async (req, res, [id]) => {
        const job = requireJob(id);
        const withSavepoint = new URL(req.url ?? "/", "http://runner").searchParams.get("savepoint") === "true";
        if (!withSavepoint) {
          await job.stop();
          send(res, 200, job.view());
          return;
        }
        const root = await savepointRoot(req, job);
        try {
          const savepoint = await job.stopWithSavepoint(root);
          log.info(`job ${job.deploymentId}: stopped with savepoint ${savepoint}`);
          send(res, 200, { ...job.view(), savepointPath: savepoint });
        } catch (err) {
          if (err instanceof JobStateError) throw new HttpError(409, err.message);
          throw err;
        }
      },
    },
    {
      method: "POST",
      pattern: /^\/jobs\/([^/]+)\/nodes\/([^/]+)\/throttle$/,
      handle: async (req, res, [id, node]) => {
        const job = requireJob(id);
        const body = throttleRequestSchema.safeParse(await readJson(req));
        if (!body.success) throw new HttpError(400, "invalid throttle request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
        const nodeId = decodeURIComponent(node ?? "");
        try {
          job.ops.setThrottle(nodeId, body.data.recordsPerSecond);
        } catch (err) {
          throw new HttpError(400, errorMessage(err));
        }
        log.info(`job ${job.deploymentId}: node "${nodeId}" ${body.data.recordsPerSecond === null ? "throttle lifted" : `throttled to ${body.data.recordsPerSecond} records/s`}`);
        send(res, 200, { jobId: job.deploymentId, throttles: job.ops.throttleSettings() });
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)\/nodes\/([^/]+)\/taps$/,
      handle: (_req, res, [id, node]) => {
        const job = requireJob(id);
        const nodeId = decodeURIComponent(node ?? "");
        if (!job.doc.nodes.some((n) => n.id === nodeId)) throw new HttpError(404, `job "${job.deploymentId}" has no node "${nodeId}"`);
        send(res, 200, { jobId: job.deploymentId, nodeId, ...job.ops.taps(nodeId) });
      },
    },
    {
      method: "GET",
      pattern: /^\/jobs\/([^/]+)\/metrics\/stream$/,
      handle: (req, res, [id]) => {
        const job = requireJob(id);
        // Each stream costs a timer and a snapshot a second: their number is capped, per client too.
        const client = req.socket.remoteAddress ?? "unknown";
        const refusal = streams.take(client);
        if (refusal !== undefined) throw new HttpError(429, refusal);
        req.on("close", () => streams.release(client));
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          connection: "keep-alive",
        });
        let previous: { at: number; snap: LiveSnapshot } | undefined;
        const push = () => {
          const at = Date.now();
          const snap = liveSnapshot(job, previous, at);
          previous = { at, snap };
          res.write(`event: metrics\ndata: ${JSON.stringify(snap)}\n\n`);
        };
        push();
        const timer = setInterval(push, streamIntervalMs);
        req.on("close", () => clearInterval(timer));
      },
    },
  ];

  /** The savepoint folder's parent: the request's `dir`, else `<checkpoint root>/savepoints/<job>`. */
  async function savepointRoot(req: IncomingMessage, job: ManagedJob): Promise<string> {
    const text = await readBody(req);
    const body = savepointRequestSchema.safeParse(text.trim() === "" ? {} : parseJson(text));
    if (!body.success) throw new HttpError(400, "invalid savepoint request", { issues: body.error.issues.map((i) => `${i.path.join(".") || "body"}: ${i.message}`) });
    return body.data.dir !== undefined ? inCheckpointRoot(body.data.dir, "dir") : path.join(env.checkpointRoot, "savepoints", job.deploymentId);
  }

  /** A restore's or savepoint's folder, resolved inside the checkpoint root (realpath), else 400. */
  function inCheckpointRoot(p: string, what: string): string {
    try {
      return confinePath(p, what, { root: env.checkpointRoot, folder: "checkpoint folder" });
    } catch (err) {
      if (err instanceof PathOutsideFolderError) throw new HttpError(400, err.message);
      throw err;
    }
  }

  /** A deploy's refusal as an HTTP error: 409 for the job or an output taken, 400 for a path outside its folder. */
  function deployError(err: unknown): unknown {
    if (err instanceof DeployConflictError || err instanceof OutputConflictError) return new HttpError(409, err.message);
    if (err instanceof PathOutsideFolderError) return new HttpError(400, err.message);
    return err;
  }

  /** Whether the state of the checkpoint or savepoint folder `from` fits `doc` (nodes named when it does not). */
  async function restoreCheck(from: string, doc: Parameters<typeof checkRestore>[1], allowNonRestoredState: boolean, label = `"${from}"`): Promise<{ problems: string[]; dropped: string[] }> {
    let folder;
    try {
      folder = await readCheckpointFolder(from);
    } catch (err) {
      throw new HttpError(400, `restoreFrom: ${errorMessage(err)}`);
    }
    if (!folder.meta.graph) return { problems: [], dropped: [] };
    return checkRestore(folder.meta.graph, doc, allowNonRestoredState, label);
  }

  /**
   * A job submitted again under its id (the web app's reconciler after a runner restart) restores
   * from its own newest checkpoint: refused here, naming the nodes, when that state cannot be read
   * or does not fit, rather than by a job that then fails and restarts forever.
   */
  async function ownCheckpointCheck(jobId: string, doc: Parameters<typeof checkRestore>[1], allowNonRestoredState: boolean, wording: (problem: string) => string): Promise<void> {
    if (jobs.get(jobId)?.active) return; // refused as a conflict by the deploy
    let latest;
    try {
      latest = await new DirectoryCheckpointStore(path.join(env.checkpointRoot, jobId), 1).latest();
    } catch (err) {
      throw new HttpError(400, `job "${jobId}" cannot restore its newest checkpoint: ${errorMessage(err)}`);
    }
    if (!latest?.meta.graph) return;
    const check = checkRestore(latest.meta.graph, doc, allowNonRestoredState, `checkpoint ${latest.meta.id} of job "${jobId}"`);
    if (check.problems.length > 0) throw new HttpError(400, `the state in checkpoint ${latest.meta.id} of job "${jobId}" does not fit the pipeline`, { issues: check.problems.map(wording) });
  }

  function requireJob(id: string | undefined): ManagedJob {
    const job = id === undefined ? undefined : jobs.get(decodeURIComponent(id));
    if (!job) throw new HttpError(404, `no job "${id ?? ""}"`);
    return job;
  }

  return createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://runner");
    const method = req.method ?? "GET";
    const refused = refuseRequest(req, url.pathname, method, token, hosts);
    if (refused) {
      send(res, refused.status, { error: refused.error });
      return;
    }
    const matching = routes.filter((r) => r.pattern.test(url.pathname));
    const route = matching.find((r) => r.method === method);
    if (!route) {
      if (matching.length > 0) send(res, 405, { error: `${method} is not allowed on ${url.pathname}` });
      else send(res, 404, { error: `no route ${method} ${url.pathname}` });
      return;
    }
    const params = route.pattern.exec(url.pathname)?.slice(1) ?? [];
    Promise.resolve()
      .then(() => route.handle(req, res, params))
      .catch((err: unknown) => {
        if (err instanceof HttpError) {
          // The unread rest of a refused body is not waited for: the connection closes after the answer.
          if (err.status === 413) res.setHeader("connection", "close");
          send(res, err.status, { error: err.message, ...err.body });
          return;
        }
        log.error(`${method} ${url.pathname}: ${errorMessage(err)}`);
        if (!res.headersSent) send(res, 500, { error: errorMessage(err) });
        else res.end();
      });
  });
}

/** The names a request's Host may carry: loopback's, the bound host's and KEYFLOW_RUNNER_ALLOWED_HOSTS. */
export function allowedHosts(env: Pick<RunnerEnv, "runnerHost" | "allowedHosts">): Set<string> {
  const bound = env.runnerHost.toLowerCase();
  return new Set(["localhost", "127.0.0.1", "[::1]", bound.includes(":") && !bound.startsWith("[") ? `[${bound}]` : bound, ...(env.allowedHosts ?? [])]);
}

/** Concurrent metric streams, in all and per client address. */
class StreamSlots {
  private total = 0;
  private readonly perClient = new Map<string, number>();
  constructor(
    private readonly max: number,
    private readonly maxPerClient: number,
  ) {}

  /** undefined when a slot was taken, else why not. */
  take(client: string): string | undefined {
    const mine = this.perClient.get(client) ?? 0;
    if (mine >= this.maxPerClient) return `too many metric streams from ${client} (${this.maxPerClient}, KEYFLOW_RUNNER_MAX_STREAMS_PER_CLIENT): close one first`;
    if (this.total >= this.max) return `too many metric streams on this runner (${this.max}, KEYFLOW_RUNNER_MAX_STREAMS): try again later`;
    this.total += 1;
    this.perClient.set(client, mine + 1);
    return undefined;
  }

  release(client: string): void {
    const mine = this.perClient.get(client) ?? 0;
    if (mine <= 0) return;
    this.total -= 1;
    if (mine === 1) this.perClient.delete(client);
    else this.perClient.set(client, mine - 1);
  }
}

/**
 * The job-control API's guard. No browser talks to the runner (the web app calls it from its server),
 * so there is no CORS: a page on another site cannot read it, and requiring `application/json` on
 * POST keeps a cross-site form or `text/plain` post (which skips the preflight) from deploying or
 * stopping a job. A page that rebinds its own DNS name to this machine still sends its name as Host,
 * so only the runner's names are answered (421), probes included. Every route but the probes wants
 * the bearer token.
 */
export function refuseRequest(req: IncomingMessage, pathname: string, method: string, token: string, hosts: ReadonlySet<string>): { status: number; error: string } | undefined {
  const host = (req.headers.host ?? "").toLowerCase().replace(/:\d*$/, "");
  if (!hosts.has(host)) {
    return { status: 421, error: `Host "${host}" is not one of this runner's names (${[...hosts].join(", ")}); add it to KEYFLOW_RUNNER_ALLOWED_HOSTS if it is` };
  }
  const probe = method === "GET" && (pathname === "/healthz" || pathname === "/metrics");
  if (!probe) {
    const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
    const a = Buffer.from(given);
    const b = Buffer.from(token);
    if (a.length !== b.length || !timingSafeEqual(a, b)) return { status: 401, error: "missing or wrong bearer token (KEYFLOW_RUNNER_TOKEN, or the runner-token file `keyflow serve` writes in its state folder)" };
  }
  // An upload is the one body that is not JSON: JSON lines, under their own type.
  const bodyType = method === "POST" && pathname === "/files" ? "application/x-ndjson" : "application/json";
  if (method === "POST" && (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() !== bodyType) {
    return { status: 415, error: `${method} ${pathname} takes content-type ${bodyType}` };
  }
  if (method === "OPTIONS") return { status: 405, error: "no cross-origin access: the runner's API is for servers" };
  return undefined;
}
