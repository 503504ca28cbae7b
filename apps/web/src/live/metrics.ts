// The live figures of a running job, as the canvas shows them: the runner's SSE snapshot
// (GET /jobs/:id/metrics/stream) checked on arrival, and the per-second rates the web server
// computes from two successive snapshots' counters (never guessed in the browser).
import { z } from "zod";

const finiteOrNull = z.number().nullable().optional();

/** Busy / backpressured / idle ms per second (Flink's task metrics), when the runner reports them. */
const taskTimesShape = {
  busyTimeMsPerSecond: z.number().optional(),
  backPressuredTimeMsPerSecond: z.number().optional(),
  idleTimeMsPerSecond: z.number().optional(),
};

const runnerNodeSchema = z.looseObject({
  type: z.string().default("?"),
  recordsIn: z.number().default(0),
  recordsOut: z.number().default(0),
  late: z.number().default(0),
  deadLetters: z.number().default(0),
  keys: z.number().default(0),
  timers: z.number().default(0),
  stateBytes: z.number().default(0),
  watermark: finiteOrNull,
  ...taskTimesShape,
  queuedRecords: z.number().optional(),
  /** Sinks: the records-per-second cap set on the runner (null: none). */
  throttleRecordsPerSecond: z.number().nullable().optional(),
});

/** A task or subtask of a parallel job: the nodes chained in it and where its time goes. */
const runnerTaskSchema = z.looseObject({
  task: z.string().optional(),
  subtask: z.number().optional(),
  nodes: z.array(z.string()).default([]),
  queuedRecords: z.number().optional(),
  /** Records that entered each node in this subtask. */
  recordsIn: z.record(z.string(), z.number()).optional(),
  ...taskTimesShape,
});

/** A source partition as the runner sees it (records, offset, idleness, lag, watermark). */
const partitionSchema = z.object({
  partition: z.number(),
  records: z.number(),
  lastOffset: z.string().nullable(),
  lastRecordAt: z.number().nullable(),
  idle: z.boolean(),
  lag: z.number().nullable(),
  watermark: z.number().nullable(),
});
export type SourcePartition = z.infer<typeof partitionSchema>;

const checkpointProgressSchema = z.object({
  id: z.number(),
  triggeredAt: z.number(),
  tasks: z.array(z.object({ task: z.string(), subtask: z.number(), node: z.string().optional(), acknowledged: z.boolean(), alignmentMs: z.number().optional() })),
});
export type CheckpointProgress = z.infer<typeof checkpointProgressSchema>;

const failedCheckpointSchema = z.object({ id: z.number(), triggeredAt: z.number(), failedAt: z.number(), reason: z.string() });
export type FailedCheckpoint = z.infer<typeof failedCheckpointSchema>;

/** Records and hottest keys per subtask of a keyed operator, counted by the runner at the exchange. */
const operatorSkewSchema = z.object({
  node: z.string(),
  records: z.array(z.number()),
  mean: z.number(),
  skewedSubtasks: z.array(z.number()),
  hotKeys: z.array(z.object({ key: z.string(), count: z.number(), error: z.number(), subtask: z.number(), share: z.number() })),
});
export type OperatorSkew = z.infer<typeof operatorSkewSchema>;

/** One event of the runner's metrics stream; unknown fields are tolerated (the runner grows). */
export const runnerSnapshotSchema = z.looseObject({
  jobId: z.string(),
  status: z.string().default("running"),
  time: z.string(),
  deadLetters: z.number().default(0),
  lastCheckpointId: z.number().nullable().default(null),
  nodes: z.record(z.string(), runnerNodeSchema),
  /** Parallel jobs: per task and subtask (whatever name the runner gives the list). */
  subtasks: z.array(runnerTaskSchema).optional(),
  tasks: z.array(runnerTaskSchema).optional(),
  sources: z.record(z.string(), z.looseObject({ input: z.string().optional(), lag: z.record(z.string(), z.number()).default({}) })).default({}),
  sourcePartitions: z.record(z.string(), z.object({ input: z.string().nullable(), partitions: z.array(partitionSchema) })).default({}),
  checkpointInProgress: checkpointProgressSchema.nullable().default(null),
  failedCheckpoints: z.array(failedCheckpointSchema).default([]),
  skew: z.array(operatorSkewSchema).default([]),
});
export type RunnerSnapshot = z.infer<typeof runnerSnapshotSchema>;

export interface LiveNodeMetrics {
  type: string;
  recordsIn: number;
  recordsOut: number;
  late: number;
  deadLetters: number;
  keys: number;
  timers: number;
  stateBytes: number;
  /** Epoch ms; null before the first record and after the end of input. */
  watermark: number | null;
  /** Records per second since the previous snapshot (0 for the first, and after a counter reset). */
  recordsInPerSecond: number;
  recordsOutPerSecond: number;
  latePerSecond: number;
  deadLettersPerSecond: number;
  /** Present only when the runner reports them (parallel jobs): the worst subtask running the node. */
  busyTimeMsPerSecond?: number;
  backPressuredTimeMsPerSecond?: number;
  idleTimeMsPerSecond?: number;
  /** Records queued on the node's task's output channels, when reported. */
  queuedRecords?: number;
  /** Sinks: the records-per-second cap in force on the runner (null: none); absent for other nodes. */
  throttleRecordsPerSecond?: number | null;
}

export interface LiveMetrics {
  deploymentId: string;
  jobId: string;
  status: string;
  /** Epoch ms of the snapshot (the runner's clock). */
  at: number;
  /** Seconds between this snapshot and the one the rates were computed from (0: first snapshot). */
  intervalSeconds: number;
  deadLetters: number;
  lastCheckpointId: number | null;
  nodes: Record<string, LiveNodeMetrics>;
  /** Kafka consumer lag per source node and partition. */
  sourceLag: Record<string, Record<string, number>>;
  /** Per source node: its input and partitions, as the runner reports them. */
  sourcePartitions: RunnerSnapshot["sourcePartitions"];
  /** Parallel jobs: the checkpoint in flight with each task's acknowledgement. */
  checkpointInProgress: CheckpointProgress | null;
  /** Parallel jobs: aborted checkpoints with their reason, newest first. */
  failedCheckpoints: FailedCheckpoint[];
  /** Parallel jobs: load and hottest keys per keyed operator and subtask. */
  skew: OperatorSkew[];
}

/** Per-second rate of a counter between two readings; a counter that went down (restart) gives 0. */
export function counterRate(now: number, then: number | undefined, seconds: number): number {
  if (then === undefined || seconds <= 0 || now < then) return 0;
  return Math.round(((now - then) / seconds) * 10) / 10;
}

type TaskTimes = Pick<LiveNodeMetrics, "busyTimeMsPerSecond" | "backPressuredTimeMsPerSecond" | "idleTimeMsPerSecond" | "queuedRecords">;

/** Task figures per node: a node in several subtasks shows the worst (most busy, most backpressured). */
function taskTimesByNode(snap: RunnerSnapshot): Map<string, TaskTimes> {
  const out = new Map<string, TaskTimes>();
  const max = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));
  for (const t of [...(snap.subtasks ?? []), ...(snap.tasks ?? [])]) {
    for (const node of t.nodes) {
      const prev = out.get(node) ?? {};
      const next: TaskTimes = {};
      const busy = max(prev.busyTimeMsPerSecond, t.busyTimeMsPerSecond);
      const bp = max(prev.backPressuredTimeMsPerSecond, t.backPressuredTimeMsPerSecond);
      const idle = max(prev.idleTimeMsPerSecond, t.idleTimeMsPerSecond);
      const queued = t.queuedRecords === undefined ? prev.queuedRecords : (prev.queuedRecords ?? 0) + t.queuedRecords;
      if (busy !== undefined) next.busyTimeMsPerSecond = busy;
      if (bp !== undefined) next.backPressuredTimeMsPerSecond = bp;
      if (idle !== undefined) next.idleTimeMsPerSecond = idle;
      if (queued !== undefined) next.queuedRecords = queued;
      out.set(node, next);
    }
  }
  return out;
}

/** The canvas's figures from a runner snapshot and the previous one (rates from their counters). */
export function toLiveMetrics(deploymentId: string, snap: RunnerSnapshot, previous: RunnerSnapshot | undefined): LiveMetrics {
  const at = Date.parse(snap.time);
  const before = previous ? Date.parse(previous.time) : Number.NaN;
  const seconds = Number.isFinite(before) && Number.isFinite(at) && at > before ? (at - before) / 1000 : 0;
  const times = taskTimesByNode(snap);
  const nodes: Record<string, LiveNodeMetrics> = {};
  for (const [id, m] of Object.entries(snap.nodes)) {
    const p = previous?.nodes[id];
    const fromNode: TaskTimes = {};
    if (m.busyTimeMsPerSecond !== undefined) fromNode.busyTimeMsPerSecond = m.busyTimeMsPerSecond;
    if (m.backPressuredTimeMsPerSecond !== undefined) fromNode.backPressuredTimeMsPerSecond = m.backPressuredTimeMsPerSecond;
    if (m.idleTimeMsPerSecond !== undefined) fromNode.idleTimeMsPerSecond = m.idleTimeMsPerSecond;
    if (m.queuedRecords !== undefined) fromNode.queuedRecords = m.queuedRecords;
    nodes[id] = {
      type: m.type,
      recordsIn: m.recordsIn,
      recordsOut: m.recordsOut,
      late: m.late,
      deadLetters: m.deadLetters,
      keys: m.keys,
      timers: m.timers,
      stateBytes: m.stateBytes,
      watermark: typeof m.watermark === "number" && Number.isFinite(m.watermark) ? m.watermark : null,
      recordsInPerSecond: counterRate(m.recordsIn, p?.recordsIn, seconds),
      recordsOutPerSecond: counterRate(m.recordsOut, p?.recordsOut, seconds),
      latePerSecond: counterRate(m.late, p?.late, seconds),
      deadLettersPerSecond: counterRate(m.deadLetters, p?.deadLetters, seconds),
      ...times.get(id),
      ...fromNode,
      ...(m.throttleRecordsPerSecond !== undefined ? { throttleRecordsPerSecond: m.throttleRecordsPerSecond } : {}),
    };
  }
  const sourceLag: LiveMetrics["sourceLag"] = {};
  for (const [id, s] of Object.entries(snap.sources)) sourceLag[id] = s.lag;
  return {
    deploymentId,
    jobId: snap.jobId,
    status: snap.status,
    at: Number.isFinite(at) ? at : Date.now(),
    intervalSeconds: seconds,
    deadLetters: snap.deadLetters,
    lastCheckpointId: snap.lastCheckpointId,
    nodes,
    sourceLag,
    sourcePartitions: snap.sourcePartitions,
    checkpointInProgress: snap.checkpointInProgress,
    failedCheckpoints: snap.failedCheckpoints,
    skew: snap.skew,
  };
}
