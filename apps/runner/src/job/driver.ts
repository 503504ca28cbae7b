// The job driver: one LocalJob, its sources and sinks, and the loop between them.
//
// One thread runs the loop: take a source batch, push its records into the job, advance processing
// time, drain the job's emissions to the sinks and the dead-letter output, and release the batch
// (which lets that source read on). Between two batches the job holds no half-processed record,
// so a checkpoint there is consistent without barriers: the engine's snapshot, the position after
// the last processed batch of every source, and each sink's staged epoch.
//
// Checkpoint protocol (two-phase commit, Flink's TwoPhaseCommitSinkFunction): snapshot → sinks
// prepareCommit (flush; each returns its pending transaction) → write `chk-<id>` durably (fsync) →
// sinks commit → mark it committed → sources checkpointCompleted (Kafka commits group offsets).
// The checkpoint is complete once written: a restore takes the newest written checkpoint and the
// sinks finish the commit it lists (committing again what already committed changes nothing), then
// the driver marks it committed before the sinks write anything new; if the broker aborted every
// transaction it lists (the runner stalled past the transaction timeout), the epoch is replayed from
// the committed checkpoint before it instead (./recover-epoch.ts). KEYFLOW_CRASH_AT (./crash-hook)
// kills the process between the phases in tests.
import { createHash } from "node:crypto";
import { LocalJob, mergeJobSnapshots, SnapshotHold, type LocalJobOptions, type OperatorServices, type PipelineDocument } from "@keyflow/operators";
import { ParallelExecution, prepareKeyedSubtasks, type TaskEmission, type AnsweredState, type ExchangeOptions, type FailedCheckpoint, type ParallelCheckpoint, type SubtaskMetrics } from "../exec/parallel";
import { TimeAccount, type TaskTimes } from "../exec/channel";
import { planParallel, type ParallelPlan } from "../exec/plan";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import type { DeadLetter, DeadLetterSink, RecordSink, RecordSource, SinkRecord, SourceBatch, SourceInputMetrics } from "../io/types";
import { BatchQueue } from "./batch-queue";
import { ChangelogCompactor } from "./changelog-compactor";
import { ChangelogChains, chainMeta, type ChangelogLink, type TaskChangelog } from "./changelog-chains";
import { ChangesAheadSchedule, MaterializePacer } from "./materialize";
import { nextCheckpointDue } from "./checkpoint-schedule";
import { startSources } from "./source-order";
import { checkJobStateBudget, STATE_BUDGET_CHECK_MS } from "./state-budget";
import { crashPoint } from "./crash-hook";
import { FencedError, isFenced } from "./lease";
import type { CheckpointMeta, CheckpointState, CheckpointStore, StoredCheckpoint } from "./checkpoints";
import { CHECKPOINT_FORMAT, checkpointFolderName, readCheckpointFolder, STATE_FILE, taskFile, writeSavepoint } from "./checkpoints";
import { checkRestore, graphOf } from "./restore-compat";
import { recoverEpoch, type TransactionProbe } from "./recover-epoch";
import type { DiskStateStore } from "../state/disk-store";
import { hasDiskState, materializeDiskState, mergedSnapshot, openDiskStore, SHARED_DIR, stateDirFor } from "../state/disk-checkpoints";
import { writeFileAtomic } from "../io/file/atomic";
import path from "node:path";
import { rmSync } from "node:fs";
import type { Clock } from "./clock";
import { pushSourceBatch, type PartitionActivity } from "./push-batch";
import type { JsonValue } from "@keyflow/operators";

export type JobNodeMetrics = ReturnType<LocalJob["metrics"]>[string];

/** A source or sink node as the job lists it (params already parsed by the operator's spec). */
export interface JobIoNode {
  nodeId: string;
  type: string;
  params: unknown;
}

/** Builds the I/O of one job. Kafka, file and demo connectors live behind it (../io/connectors). */
export interface Connectors {
  source(node: JobIoNode): RecordSource;
  sink(node: JobIoNode): RecordSink;
  deadLetters(): DeadLetterSink;
  /** Releases shared clients after every source and sink is closed. */
  close(): Promise<void>;
  /** Finishes or finds lost a Kafka transaction an uncommitted checkpoint lists (./recover-epoch.ts); absent without Kafka outputs. */
  recoverTransaction?: TransactionProbe;
}

export type JobStatus = "starting" | "running" | "finishing" | "stopping" | "finished" | "stopped" | "failed";

export interface CheckpointStats {
  id: number;
  /** Processing time when the snapshot was taken. */
  triggeredAt: number;
  /** Bytes this checkpoint wrote (the disk backend's delta; the whole state on the heap backend). */
  incrementalBytes?: number;
  completedAt: number;
  durationMs: number;
  stateBytes: number;
  /** Where the checkpoint lives, or undefined when checkpoints are not kept. */
  path: string | undefined;
  /** The longest barrier alignment of any task (0 for a single-threaded job, which needs none). */
  alignmentMs: number;
  /** Each task's acknowledgement: its state bytes and alignment time (Flink's per-subtask checkpoint details). */
  acks: CheckpointAck[];
}

export interface CheckpointAck {
  task: "source" | "keyed" | "sink";
  subtask: number;
  bytes: number;
  alignmentMs: number;
  /** Inclusive key-group range of a keyed subtask. */
  keyGroups?: [number, number];
}

export interface JobSummary {
  jobId: string;
  pipeline: string;
  status: "finished" | "stopped";
  restoredFrom: number | undefined;
  nodes: Record<string, JobNodeMetrics & { type: string }>;
  deadLetters: number;
  deadLetterTarget: string;
  sinks: { nodeId: string; target: string }[];
  checkpoints: number;
  lastCheckpoint: CheckpointStats | undefined;
  checkpointDir: string | undefined;
  durationMs: number;
}

export interface JobDriverOptions {
  jobId: string;
  doc: PipelineDocument;
  connectors: Connectors;
  checkpoints: CheckpointStore;
  clock: Clock;
  log: Logger;
  /** Overrides settings.checkpointIntervalMs (tests). */
  checkpointIntervalMs?: number;
  /**
   * Heap state of a single-threaded job, kept in a checkpoint folder: each checkpoint writes only the
   * keyed state changed since the one before, over a whole state written now and then in the
   * background (default true; false writes every checkpoint whole).
   */
  changelogCheckpoints?: boolean;
  /** How often processing time advances and idle partitions are checked while no batch arrives. */
  tickMs?: number;
  /** How long a stop waits for sources to let go before closing them anyway. */
  stopTimeoutMs?: number;
  /** Told of each completed checkpoint (the service records them in Postgres) and its sources' positions. Must not throw. */
  onCheckpoint?: (stats: CheckpointStats, sources: Record<string, JsonValue>) => void;
  /**
   * Told of each checkpoint that failed or was aborted, with its reason (the service records them in
   * Postgres). Not told when this runner was fenced: the id may be the new owner's. Must not throw.
   */
  onCheckpointFailed?: (failed: FailedCheckpoint) => void;
  /** Told of each change of status. Must not throw. */
  onStatus?: (status: JobStatus) => void;
  /** Network buffers between the tasks of a parallel job (settings.parallelism > 1). */
  exchange?: ExchangeOptions;
  /**
   * Start from this checkpoint or savepoint folder instead of the newest checkpoint of the job's own
   * folder (a deploy with restoreFrom, `keyflow run --restore`). Its state must fit the pipeline
   * (./restore-compat.ts).
   */
  restoreFrom?: string;
  /** Drop the state of nodes the pipeline no longer has instead of refusing the restore (Flink's --allow-non-restored-state). */
  allowNonRestoredState?: boolean;
  /** Given to the job's operators (process.custom's sandbox, see ../sandbox/custom-function-factory.ts). */
  operatorServices?: OperatorServices;
}

/** How many completed checkpoints the driver remembers for GET /jobs/:id/checkpoints. */
const HISTORY = 50;

type Item = { kind: "batch"; source: RecordSource; batch: SourceBatch } | { kind: "end"; source: RecordSource } | { kind: "error"; source: RecordSource; error: unknown };

/** A checkpoint whose sinks have prepared (phase 1), waiting for its phase 2 (JobDriver.finishCheckpoint). */
interface PreparedCheckpoint {
  id: number;
  started: number;
  t0: number;
  state: CheckpointState;
  sources: Record<string, JsonValue>;
  extra: Pick<CheckpointMeta, "parallelism" | "maxParallelism" | "tasks" | "disk">;
  sinkList: RecordSink[];
  prepared: JsonValue[];
  sinks: Record<string, JsonValue>;
  deadLetters: JsonValue;
  /** performance.now() at the phases' ends so far, for the debug line. */
  phase: number[];
  stateBytes: number;
  incrementalBytes: number;
  /** Released once the state is written: its packed columns may then be written over (see SnapshotHold). */
  hold: SnapshotHold | undefined;
  /** A changelog checkpoint: by state file, its snapshot's kind and the chain it builds on. */
  changelogs: TaskChangelogs | undefined;
}

/** A checkpoint's changelog snapshots by state file (`state.bin`, a parallel task's file), with their bytes. */
type TaskChangelogs = Map<string, TaskChangelog & { bytes: number }>;

export class JobDriver {
  readonly jobId: string;
  private phase: JobStatus = "starting";
  failure: string | undefined;
  readonly startedAt: number;
  lastCheckpoint: CheckpointStats | undefined;
  /** The newest completed checkpoints, oldest first. */
  readonly checkpointHistory: CheckpointStats[] = [];
  /** The newest failed or aborted checkpoints with their reason, oldest first. */
  readonly failedCheckpoints: FailedCheckpoint[] = [];
  checkpointsCompleted = 0;
  restoredFrom: number | undefined;
  /** Epochs replayed because the broker aborted every transaction of an uncommitted checkpoint (./recover-epoch.ts). */
  epochsReplayed = 0;
  deadLetterCount = 0;

  private job: LocalJob | undefined;
  /** The disk state backend's store of a single-threaded job (settings.stateBackend "disk"). */
  private disk: DiskStateStore | undefined;
  /** Set when the job runs as parallel tasks (../exec). */
  private parallel: ParallelExecution | undefined;
  private lastMetrics: Record<string, JobNodeMetrics> = {};
  private readonly nodeTypes: Map<string, string>;
  private readonly queue = new BatchQueue<Item>();
  private readonly abort = new AbortController();
  private stopRequested: string | undefined;
  private running: Promise<JobSummary> | undefined;
  private sources: RecordSource[] = [];
  private sinks = new Map<string, RecordSink>();
  private deadLetters: DeadLetterSink | undefined;
  private readonly positions = new Map<string, JsonValue>();
  private readonly activity = new Map<string, PartitionActivity>();
  private nextCheckpointId = 1;
  /**
   * Changelog checkpoints (heap state in a checkpoint folder): per state file, the written snapshots
   * its next checkpoint builds on, a whole one then changes.
   */
  private readonly changelogs = new ChangelogChains();
  /** The background resolution and write of a whole state (at most one at a time), and its worker thread. */
  private baseWrite: Promise<void> | undefined;
  /**
   * By state file: the changes taken ahead of its next barrier (see writeChangesAhead), in order,
   * each with the last barrier taken (a keyed subtask: aligned) before it.
   */
  private readonly changesAhead = new Map<string, Array<{ after: number; link: Promise<ChangelogLink> }>>();
  private changesAheadWritten = 0;
  /** A whole state written in the background between its naming and its chain taking it (see startBaseWrite). */
  private publishing: Promise<void> | undefined;
  private compactor: ChangelogCompactor | undefined;
  /** A checkpoint is wanted now (a savepoint), whatever the interval says. */
  private checkpointWanted = false;
  /** Savepoints waiting for the next completed checkpoint: the folder to copy it into. */
  private savepointWaiters: Array<{ root: string; resolve: (path: string) => void; reject: (err: unknown) => void }> = [];
  /** The second half of the last checkpoint while it runs beside the loop (see commitCheckpoint); it never rejects. */
  private finishing: Promise<void> | undefined;
  /** Why that second half failed: the loop fails the job with it. */
  private finishingFailure: unknown;
  private readonly digest: string;
  private readonly log: Logger;
  /** Single-threaded jobs: the engine loop's time (idle waiting for a batch, backpressured waiting for the sinks). */
  private readonly engineTime = new TimeAccount();

  constructor(private readonly opts: JobDriverOptions) {
    this.jobId = opts.jobId;
    this.log = opts.log;
    this.startedAt = opts.clock.now();
    this.nodeTypes = new Map(opts.doc.nodes.map((n) => [n.id, n.type]));
    this.digest = createHash("sha256").update(JSON.stringify({ nodes: opts.doc.nodes, edges: opts.doc.edges })).digest("hex").slice(0, 16);
  }

  get status(): JobStatus {
    return this.phase;
  }
  private set status(next: JobStatus) {
    if (next === this.phase) return;
    this.phase = next;
    this.opts.onStatus?.(next);
  }

  get pipelineName(): string {
    return this.opts.doc.name;
  }

  /** Live per-node figures (the last ones once the job has ended). */
  metrics(): Record<string, JobNodeMetrics> {
    if (this.parallel) return (this.lastMetrics = this.parallel.metrics());
    if (this.job && (this.status === "running" || this.status === "finishing" || this.status === "stopping")) this.lastMetrics = this.job.metrics();
    return this.lastMetrics;
  }

  /**
   * Per task and subtask of a parallel job: busy / backpressured / idle ms per second, queued
   * records, per-node figures. Empty for a single-threaded job.
   */
  subtaskMetrics(): SubtaskMetrics[] {
    return this.parallel?.subtaskMetrics() ?? [];
  }

  /** The parallel runtime of a parallel job (live operations read its checkpoint progress and key skew). */
  get parallelExecution(): ParallelExecution | undefined {
    return this.parallel;
  }

  /** Busy / backpressured / idle ms per second of the engine loop of a single-threaded job; undefined for a parallel one. */
  engineTimes(): TaskTimes | undefined {
    return this.parallel ? undefined : this.engineTime.perSecond();
  }

  /** Input-side figures of each source that reports them (Kafka consumer lag), by node id. */
  sourceMetrics(): Record<string, SourceInputMetrics> {
    const out: Record<string, SourceInputMetrics> = {};
    for (const s of this.sources) {
      const m = s.inputMetrics?.();
      if (m) out[s.nodeId] = m;
    }
    return out;
  }

  /** Runs the job to its end (bounded sources) or until stop(); rejects when it fails. */
  run(): Promise<JobSummary> {
    this.running ??= this.execute();
    return this.running;
  }

  /** Graceful stop: no further batches, a final checkpoint, then close. */
  stop(reason = "stop requested"): void {
    if (this.stopRequested !== undefined) return;
    this.stopRequested = reason;
    if (this.status === "running") this.status = "stopping";
    this.abort.abort(new Error(reason));
    this.queue.close();
  }

  private async execute(): Promise<JobSummary> {
    const { doc, checkpoints, clock, connectors } = this.opts;
    let acquired = false;
    try {
      await checkpoints.acquire();
      acquired = true;
      const restored = await this.restorePoint();
      const plan = this.planParallel();
      // Built while the sources and sinks connect, ready when the subtasks start.
      if (plan) prepareKeyedSubtasks();
      // A parallel job builds its tasks' jobs itself; this one only lists the sources and sinks.
      const endpoints = plan ? LocalJob.create(doc) : (this.job = this.createJob(restored));
      this.restoredFrom = restored?.meta.id;
      this.nextCheckpointId = await checkpoints.nextId();
      this.lastMetrics = endpoints.metrics();

      for (const node of endpoints.sinks) this.sinks.set(node.nodeId, connectors.sink(node));
      this.deadLetters = connectors.deadLetters();
      this.sources = endpoints.sources.map((node) => connectors.source(node));

      const restoredCommitted = restored?.committed ?? true;
      await Promise.all([...this.sinks.values()].map((s) => s.open(restored?.meta.sinks[s.nodeId], restoredCommitted)));
      await this.deadLetters.open(restored?.meta.deadLetters, restoredCommitted);
      if (restored && !restored.committed) {
        // The previous run died between writing this checkpoint and committing every sink; the sinks
        // have just finished its commit. Marked now, before any sink writes again (../io/kafka/writer.ts).
        if (this.opts.restoreFrom !== undefined) await writeFileAtomic(path.join(this.opts.restoreFrom, "_committed"), new Date().toISOString() + "\n");
        else await checkpoints.markCommitted(restored.meta.id);
        this.log.info(`finished the commit of checkpoint ${restored.meta.id} left pending by the previous run`);
      }
      for (const source of this.sources) {
        this.positions.set(source.nodeId, await source.open(restored?.meta.sources[source.nodeId]));
        if (source.idleTimeoutMs !== undefined) this.activity.set(source.nodeId, { lastRecordAt: new Map(), idle: new Set() });
      }
      if (this.stopRequested === undefined) this.status = "running";
      this.log.info(
        `running pipeline "${doc.name}"` +
          (restored ? ` from checkpoint ${restored.meta.id}` : "") +
          (checkpoints.location ? ` (checkpoints in ${checkpoints.location})` : ""),
      );
      if (plan) {
        this.log.info(`parallelism ${plan.parallelism}: ${[...plan.headNodes].join(", ")} in the source task; ${[...plan.keyedNodes].join(", ")} in ${plan.parallelism} keyed subtasks`);
        this.parallel = new ParallelExecution({
          doc,
          plan,
          log: this.log,
          clock,
          sources: this.sources,
          restored,
          write: (emissions) => this.route(emissions),
          complete: (c) => this.completeParallelCheckpoint(c, plan),
          changelogFor: (subtask) => (this.changelogsKept() ? this.changelogs.take(taskFile({ task: "keyed", subtask })) : undefined),
          stage: (id, task, state) => checkpoints.stageTaskState?.(id, taskFile(task), state),
          changesAhead: (subtask, after, state) => this.writeChangesAhead(taskFile({ task: "keyed", subtask }), after, state),
          settle: () => this.settleCheckpoint(),
          aborted: (f) => this.checkpointFailed(f),
          nextCheckpointId: () => this.nextCheckpointId++,
          checkpointIntervalMs: this.opts.checkpointIntervalMs ?? doc.settings.checkpointIntervalMs,
          tickMs: this.opts.tickMs ?? 100,
          signal: this.abort.signal,
          stopRequested: () => this.stopRequested !== undefined,
          ...(this.opts.exchange ? { exchange: this.opts.exchange } : {}),
          ...(doc.settings.stateBackend === "disk"
            ? { disk: { stateDir: stateDirFor(this.jobId), sharedDir: checkpoints.location !== undefined ? path.join(checkpoints.location, SHARED_DIR) : undefined, suffix: this.diskSuffix } }
            : {}),
        });
        const ended = await this.parallel.run();
        this.lastMetrics = this.parallel.metrics();
        this.status = ended ? "finished" : "stopped";
        return this.summary();
      }
      const job = this.requireJob();
      const ended = await this.loop();
      if (ended) {
        this.status = "finishing";
        job.advanceProcessingTime(clock.now());
        await this.route(job.drain());
      }
      await this.checkpoint();
      this.lastMetrics = job.metrics();
      this.status = ended ? "finished" : "stopped";
      return this.summary();
    } catch (caught) {
      const err = await this.fencedOrAsIs(caught);
      this.failure = errorMessage(err);
      this.status = "failed";
      if (this.job) this.lastMetrics = this.job.metrics();
      else if (this.parallel) this.lastMetrics = this.parallel.metrics();
      this.abort.abort(err);
      this.queue.close();
      throw err;
    } finally {
      await this.closeAll();
      if (acquired) await checkpoints.release().catch(() => {});
    }
  }

  /**
   * A Kafka producer fenced by the broker: when another runner has taken over the checkpoint folder,
   * this one is a zombie and fails with a FencedError (never restarted, ./lease.ts); otherwise (its
   * transaction expired while it was stalled) the error stays as it is and a restart may start anew.
   */
  private async fencedOrAsIs(err: unknown): Promise<unknown> {
    if (!hasErrorNamed(err, "ProducerFencedError")) return err;
    try {
      await this.opts.checkpoints.checkOwner?.("anything more");
    } catch (fenced) {
      if (fenced instanceof FencedError) return new FencedError(`${fenced.message}. Kafka: ${errorMessage(err)}`, { cause: err });
      this.log.warn(`checking the checkpoint folder's lease after a fenced producer failed: ${errorMessage(fenced)}`);
    }
    return err;
  }

  /** The checkpoint to start from (restoreFrom, else the newest of the job's folder), checked against the pipeline. */
  private async restorePoint(): Promise<StoredCheckpoint | undefined> {
    const from = this.opts.restoreFrom;
    let restored = from !== undefined ? await readCheckpointFolder(from) : await this.opts.checkpoints.latest();
    if (restored && !restored.committed && from === undefined) {
      const recovered = await recoverEpoch(restored, this.opts.checkpoints, this.opts.connectors.recoverTransaction, this.log);
      if (recovered.replayed) this.epochsReplayed++;
      restored = recovered.restored;
    }
    if (!restored) return undefined;
    const what = from !== undefined ? `"${from}"` : `checkpoint ${restored.meta.id}`;
    const chain = restored.meta.changelog?.chain;
    if (chain !== undefined) this.log.debug(`restoring ${what}: a changelog checkpoint, its changes replayed over ${chain[0]} and ${chain.length - 1} checkpoints' changes between`);
    if (restored.meta.graph) {
      const check = checkRestore(restored.meta.graph, this.opts.doc, this.opts.allowNonRestoredState ?? false, what);
      if (check.problems.length > 0) throw new Error(`cannot restore ${what} into pipeline "${this.opts.doc.name}": ${check.problems.join("; ")}`);
      if (check.dropped.length > 0) this.log.warn(`dropping the state of ${check.dropped.map((n) => `"${n}"`).join(", ")} from ${what}: no longer in the pipeline (allowNonRestoredState)`);
    }
    if (this.opts.doc.settings.stateBackend !== "disk" && hasDiskState(restored.meta) && restored.dir !== undefined) {
      // Disk-backend state into the heap backend: every entry read back into one heap-format snapshot.
      const state = materializeDiskState(this.opts.doc, restored.meta, restored.dir, mergedSnapshot(restored.state, restored.tasks));
      const { tasks: _tasks, disk: _disk, ...meta } = restored.meta;
      return { meta, committed: restored.committed, state, dir: restored.dir };
    }
    return restored;
  }

  /**
   * Takes a checkpoint now and copies it into a new savepoint folder under `root` once every sink
   * committed it; resolves with the savepoint's path. Needs a checkpoint folder and a running job.
   */
  savepoint(root: string): Promise<string> {
    if (this.opts.checkpoints.location === undefined) return Promise.reject(new Error(`job "${this.jobId}" keeps no checkpoints (no checkpoint folder), so it cannot take a savepoint`));
    if (this.status !== "running") return Promise.reject(new Error(`job "${this.jobId}" is ${this.status}; a savepoint needs a running job`));
    return new Promise<string>((resolve, reject) => {
      this.savepointWaiters.push({ root, resolve, reject });
      this.checkpointWanted = true;
      this.parallel?.requestCheckpoint();
    });
  }

  /** Takes the next checkpoint as soon as possible (a rule job's routing switch waits for it). */
  requestCheckpoint(): void {
    if (this.status !== "running") return;
    this.checkpointWanted = true;
    this.parallel?.requestCheckpoint();
  }

  /**
   * Queryable state: `key`'s state and timers at `nodeId` (from the owning subtask of a parallel
   * job); undefined when the job is not running or the node holds nothing in this process.
   */
  async queryState(nodeId: string, key: string): Promise<AnsweredState | undefined> {
    if (this.status !== "running" && this.status !== "finishing" && this.status !== "stopping") return undefined;
    if (this.parallel) return this.parallel.queryState(nodeId, key);
    const view = this.job ? this.job.queryState(nodeId, key) : undefined;
    return view && { view, task: "single", index: 0 };
  }

  /**
   * Each partition's watermark at a source node, from the LocalJob that parses the source (the
   * source task's in a parallel job): raw Kafka and file records are only parsed there.
   */
  sourcePartitionWatermarks(nodeId: string): Array<{ partition: number; watermark: number | null; idle: boolean }> {
    if (this.parallel) return this.parallel.sourcePartitionWatermarks(nodeId);
    return this.job?.sourcePartitionWatermarks(nodeId) ?? [];
  }

  /** Copies the job's last completed checkpoint into a savepoint folder (stop with a savepoint: the final one). */
  async savepointOfLast(root: string): Promise<string> {
    const p = this.lastCheckpoint?.path;
    if (p === undefined) throw new Error(`job "${this.jobId}" has completed no checkpoint to keep as a savepoint`);
    return writeSavepoint(p, root, this.jobId);
  }

  private createJob(restored: StoredCheckpoint | undefined): LocalJob {
    const processingTime = this.opts.clock.now();
    const services = {
      ...(this.opts.operatorServices ? { operatorServices: this.opts.operatorServices } : {}),
      ...this.diskBackend(restored),
    };
    if (!restored) return LocalJob.create(this.opts.doc, { processingTime, ...services });
    if (restored.meta.pipeline.digest !== this.digest) {
      this.log.warn(`the pipeline changed since checkpoint ${restored.meta.id}; restoring state by node id`);
    }
    // A checkpoint of a parallel job: its task snapshots merged into one (every key group).
    const state = restored.state ?? mergeJobSnapshots((restored.tasks ?? []).map((t) => ({ bytes: t.state, primary: true })));
    return LocalJob.restore(this.opts.doc, state, { processingTime, ...services });
  }

  /** settings.stateBackend "disk": this job's store (restored state replayed into it) as the operators' backend. */
  private diskBackend(restored: StoredCheckpoint | undefined): Pick<LocalJobOptions, "stateBackend"> {
    if (this.opts.doc.settings.stateBackend !== "disk") return {};
    const restoredAt = restored?.dir !== undefined ? { meta: restored.meta, dir: restored.dir } : undefined;
    const store = openDiskStore({ dir: path.join(stateDirFor(this.jobId), "job"), label: "job", restored: restoredAt, maxParallelism: this.opts.doc.settings.maxParallelism });
    this.disk = store;
    return { stateBackend: (id) => store.backendFor(id) };
  }

  /** The parallel plan when settings.parallelism > 1 and the graph has a keyed part; otherwise undefined (with a log line why). */
  private planParallel(): ParallelPlan | undefined {
    const { doc } = this.opts;
    if (doc.settings.parallelism <= 1) return undefined;
    const r = planParallel(doc);
    if (r.ok) return r.plan;
    this.log.warn(`parallelism ${doc.settings.parallelism}: running in one thread: ${r.reason}`);
    return undefined;
  }

  /** Returns true when every source ended, false when stopped. */
  private async loop(): Promise<boolean> {
    const job = this.requireJob();
    const { clock } = this.opts;
    const interval = this.opts.checkpointIntervalMs ?? this.opts.doc.settings.checkpointIntervalMs;
    const tick = this.opts.tickMs ?? 100;
    let active = this.sources.length;
    startSources(this.opts.doc, this.sources, this.abort.signal, (source) =>
      source.run((batch) => this.queue.put({ kind: "batch", source, batch }), this.abort.signal).then(
        () => this.queue.put({ kind: "end", source }),
        (error: unknown) => this.queue.put({ kind: "error", source, error }),
      ),
    );
    const minPause = this.opts.doc.settings.minPauseBetweenCheckpointsMs;
    // The next checkpoint is due `interval` after the last one was due, and `minPause` after it ended.
    let nextCheckpointAt = clock.now() + interval;
    const pacer = new MaterializePacer(interval);
    const ahead = new ChangesAheadSchedule(interval);
    let stateBudgetCheckAt = clock.now() + STATE_BUDGET_CHECK_MS;
    while (active > 0) {
      if (this.finishingFailure !== undefined) throw this.finishingFailure;
      if (this.stopRequested !== undefined) return false;
      const wait = this.checkpointWanted ? 0 : Math.min(tick, Math.max(0, nextCheckpointAt - clock.now()), pacer.dueInMs(), ahead.dueInMs());
      this.engineTime.switchTo("idle");
      const taken = await this.queue.take(wait);
      this.engineTime.switchTo("busy");
      if (this.stopRequested !== undefined) {
        taken?.done();
        return false;
      }
      if (taken) {
        const { item } = taken;
        if (item.kind === "error") throw item.error;
        if (item.kind === "end") {
          job.endOfInput(item.source.nodeId);
          active--;
        } else {
          this.push(item.source, item.batch);
          pacer.inputProcessed();
          ahead.inputProcessed();
        }
      }
      const now = clock.now();
      job.advanceProcessingTime(now);
      this.markIdlePartitions(now);
      await this.route(job.drain());
      taken?.done();
      if (now >= stateBudgetCheckAt) {
        stateBudgetCheckAt = now + STATE_BUDGET_CHECK_MS;
        checkJobStateBudget(job.metrics(), this.opts.doc.settings);
      }
      if ((clock.now() >= nextCheckpointAt || this.checkpointWanted) && active > 0) {
        const startedAt = clock.now();
        const snapshotAt = performance.now();
        const due = this.checkpointWanted ? startedAt : nextCheckpointAt;
        await this.checkpoint();
        nextCheckpointAt = nextCheckpointDue(due, startedAt, interval, clock.now() + minPause);
        pacer.packed();
        ahead.barrier(this.disk === undefined && this.changelogsKept(), snapshotAt);
        this.log.debug(`state changed from now on is packed ahead from ${Math.round(pacer.leadMs)} ms before the next barrier`);
      } else if (ahead.dueInMs() === 0) {
        // Between two batches: the changes since the last checkpoint, written ahead of the next one's
        // barrier, which then takes only what changes after them (ChangesAheadSchedule).
        ahead.taken();
        this.writeChangesAhead(STATE_FILE, this.nextCheckpointId - 1, job.snapshot("changes"));
      } else if (this.queue.waiting === 0 && pacer.dueInMs() === 0) {
        // Nothing waits: pack the state changed since the last snapshot now rather than at the
        // barrier, where the exactly-once sinks' commit (and so every alert) waits for it; a slice
        // at a time, taking input between slices (the next take waits 0 ms). A changelog job's
        // passes only log (KeptColumns.changelog): its barrier packs what changed since the last.
        pacer.materializeSlice(job);
      }
    }
    return true;
  }

  private push(source: RecordSource, batch: SourceBatch): void {
    const act = this.activity.get(source.nodeId);
    pushSourceBatch(this.requireJob(), source.nodeId, batch, act, act ? this.opts.clock.now() : 0);
    this.positions.set(source.nodeId, batch.position);
  }

  private markIdlePartitions(now: number): void {
    for (const source of this.sources) {
      const act = this.activity.get(source.nodeId);
      if (!act || source.idleTimeoutMs === undefined) continue;
      for (const [partition, at] of act.lastRecordAt) {
        if (!act.idle.has(partition) && now - at >= source.idleTimeoutMs) {
          act.idle.add(partition);
          this.requireJob().markPartitionIdle(source.nodeId, partition);
        }
      }
    }
  }

  /** Hands the job's emissions to their sinks and the dead-letter output, in emission order per sink. */
  private async route(emissions: readonly TaskEmission[]): Promise<void> {
    if (emissions.length === 0) return;
    const perSink = new Map<string, SinkRecord[]>();
    const dead: DeadLetter[] = [];
    for (const e of emissions) {
      if (e.kind === "deadLetter") {
        dead.push(e);
        continue;
      }
      let list = perSink.get(e.nodeId);
      if (!list) perSink.set(e.nodeId, (list = []));
      if (e.kind === "serializedSink") list.push(e.record);
      else list.push(e.key === undefined ? { value: e.value, timestamp: e.timestamp } : { value: e.value, timestamp: e.timestamp, key: e.key });
    }
    const writes: Promise<void>[] = [];
    for (const [nodeId, records] of perSink) {
      const sink = this.sinks.get(nodeId);
      if (!sink) throw new Error(`node "${nodeId}": the job emitted to a sink the runner has not opened`);
      writes.push(sink.write(records));
    }
    if (dead.length > 0) {
      this.deadLetterCount += dead.length;
      writes.push(this.requireDeadLetters().write(dead));
    }
    // Waiting for the outputs is backpressure on the engine loop (live operations' figures).
    const before = this.engineTime.switchTo("backPressured");
    try {
      await Promise.all(writes);
    } finally {
      this.engineTime.switchTo(before);
    }
  }

  private async checkpoint(): Promise<void> {
    await this.settleCheckpoint();
    const job = this.requireJob();
    const started = this.opts.clock.now();
    const t0 = performance.now();
    const id = this.nextCheckpointId++;
    const disk = this.disk;
    // In pieces: the state's packed columns go to the file as they are, not copied into one buffer
    // first, and are reused for the next ones once written.
    if (!disk) {
      const hold = new SnapshotHold();
      const taken = this.changelogsKept() ? this.changelogs.take(STATE_FILE) : undefined;
      // Nothing reaches the job meanwhile: the loop waits for this checkpoint.
      const [changelog] = await this.withChangesAhead(id, started, [[STATE_FILE, taken]]);
      const pieces = job.snapshotPieces(hold, taken?.mode);
      const extra = changelog?.chain ? { changelog: chainMeta(changelog.chain) } : {};
      const changelogs = changelog ? new Map([[STATE_FILE, { ...changelog, bytes: pieces.byteLength }]]) : undefined;
      return this.commitCheckpoint(id, started, t0, pieces, Object.fromEntries(this.positions), extra, hold, changelogs);
    }
    // Disk backend: the snapshot leaves keyed state out; the store writes its delta (or a full dump).
    const state = disk.referenceSnapshots(() => job.snapshot());
    const location = this.opts.checkpoints.location;
    const chain = location !== undefined ? disk.writeCheckpoint(id, path.join(location, SHARED_DIR), `../${SHARED_DIR}`, this.diskSuffix) : undefined;
    await this.commitCheckpoint(id, started, t0, state, Object.fromEntries(this.positions), chain ? { disk: chain } : {});
  }

  /**
   * Whether heap state is checkpointed as changelogs: kept in a checkpoint folder, unless turned off.
   * The disk backend writes its own deltas.
   */
  private changelogsKept(): boolean {
    return this.disk === undefined && this.opts.doc.settings.stateBackend !== "disk" && this.opts.checkpoints.writeSharedState !== undefined && this.opts.changelogCheckpoints !== false;
  }

  /** A checkpoint's changelog snapshots are written: the next ones build on them; a whole state in the background when due. */
  private changelogsWritten(id: number, changelogs: TaskChangelogs): void {
    for (const [file, c] of changelogs) this.changelogs.written(file, c, { file: `${checkpointFolderName(id)}/${file}`, id, bytes: c.bytes });
    if (this.changelogs.baseDue()) this.startBaseWrite(id);
  }

  /**
   * Writes the whole state as of checkpoint `id` (written, its chains given) beside the checkpoints,
   * in the background, one file per chain, for the chains to start from: a worker thread replays
   * the chains from the files (ChangelogCompactor), and checkpoints go on meanwhile. Its bytes stand
   * for the chain they replace, so they count as much towards the next one.
   */
  private startBaseWrite(id: number): void {
    const { checkpoints } = this.opts;
    const dir = checkpoints.pathOf(id);
    if (this.baseWrite !== undefined || checkpoints.writeSharedState === undefined || dir === undefined) return;
    const write = checkpoints.writeSharedState.bind(checkpoints);
    const compactor = (this.compactor ??= new ChangelogCompactor(this.log));
    this.log.debug(`changelog: writing the whole state as of checkpoint ${id} (its chains replayed) for the checkpoints after it to build on`);
    const t0 = performance.now();
    this.baseWrite = compactor
      .resolve(dir, this.changelogs.files())
      .then(async (states) => {
        const resolvedMs = performance.now() - t0;
        const written: string[] = [];
        for (const { file: of, state } of states) {
          const tag = this.sharedTag(of);
          let published = () => {};
          try {
            const file = await write({ pieces: [state], byteLength: state.byteLength }, tag, () => {
              // Named after the next checkpoint, which retention keeps it for: no checkpoint may
              // start until the chain takes it (below), or that one would not list it and the
              // commit of it would prune the file before the next one could.
              this.publishing = new Promise<void>((resolve) => (published = resolve));
              return this.nextCheckpointId;
            });
            this.changelogs.startAt(of, { file, id, bytes: state.byteLength });
            written.push(`${file} (${state.byteLength} bytes)`);
          } finally {
            this.publishing = undefined;
            published();
          }
        }
        this.log.debug(`changelog: ${written.join(", ")} resolved in ${Math.round(resolvedMs)} ms, written in ${Math.round(performance.now() - t0 - resolvedMs)} ms`);
      })
      .catch((err: unknown) => this.log.warn(`changelog: the whole state could not be written (${errorMessage(err)}); checkpoints go on replaying the changes since the last one`))
      .finally(() => {
        this.baseWrite = undefined;
      });
  }

  /**
   * Changes of state file `of` (`state.bin`, or a keyed subtask's file) taken ahead of the barrier
   * after checkpoint `after` (ChangesAheadSchedule): written now into the shared folder, named after
   * the first checkpoint that can list them (retention keeps them until one that could has
   * completed), for that checkpoint's chain to list between the chain it builds on and its own file.
   */
  private writeChangesAhead(of: string, after: number, state: Uint8Array): void {
    const write = this.opts.checkpoints.writeSharedState?.bind(this.opts.checkpoints);
    if (write === undefined || !this.changelogsKept()) return;
    const tag = `${this.sharedTag(of)}-ahead${++this.changesAheadWritten}`;
    const link = write({ pieces: [state], byteLength: state.byteLength }, tag, () => after + 1, "delta").then(
      (file) => ({ file, id: after + 1, bytes: state.byteLength }),
      (err: unknown) => {
        const whose = of === STATE_FILE ? "the job's" : `${of.replace(/^task-keyed-(\d+)\.bin$/, "keyed subtask $1")}'s`;
        throw new Error(`${whose} changes taken ahead of the barrier after checkpoint ${after} could not be written: ${errorMessage(err)}`, { cause: err });
      },
    );
    link.catch(() => {}); // the checkpoint that lists it fails with it
    const list = this.changesAhead.get(of) ?? [];
    list.push({ after, link });
    this.changesAhead.set(of, list);
  }

  /**
   * The changes of state file `of` written ahead of barrier `id`, durable, in order; and every older
   * one is let go (a checkpoint that failed broke its chain: the next one starts a new one). Those
   * taken after this barrier are kept for the next: a subtask sends them in order with its
   * acknowledgement, so none taken before barrier `id` is still to come.
   */
  private async changesAheadOf(of: string, id: number): Promise<ChangelogLink[]> {
    const list = this.changesAhead.get(of) ?? [];
    const before = list.filter((c) => c.after < id);
    this.changesAhead.set(of, list.filter((c) => c.after >= id));
    return Promise.all(before.map((c) => c.link));
  }

  /**
   * Each of `taken` (state file, chain taken), a chain of changes, with the parts of that file written
   * ahead of checkpoint `id` at its end (a whole snapshot holds them already). A part that could not
   * be written fails the checkpoint: its chain would miss those changes.
   */
  private async withChangesAhead(id: number, started: number, taken: ReadonlyArray<readonly [string, TaskChangelog | undefined]>): Promise<Array<TaskChangelog | undefined>> {
    let ahead: ChangelogLink[][];
    try {
      ahead = await Promise.all(taken.map(([of]) => this.changesAheadOf(of, id)));
    } catch (err) {
      this.checkpointFailed({ id, triggeredAt: started, failedAt: this.opts.clock.now(), reason: errorMessage(err) });
      throw err;
    }
    return taken.map(([, c], i) => (c?.mode === "changes" && c.chain !== undefined ? { ...c, chain: [...c.chain, ...ahead[i]!] } : c));
  }

  /** The name a file in the shared folder takes after state file `of`: one per chain beside the others. */
  private sharedTag(of: string): string {
    return of === STATE_FILE ? this.diskSuffix : `${this.diskSuffix}-${of.replace(/\.bin$/, "")}`;
  }

  /** Every task of a parallel job acknowledged checkpoint `c.id` and the sink task aligned it: commit it. */
  private async completeParallelCheckpoint(c: ParallelCheckpoint, plan: ParallelPlan): Promise<void> {
    const changelogs: TaskChangelogs = new Map();
    const taken = await this.withChangesAhead(c.id, c.startedAt, c.changelogs.map((l, subtask) => [taskFile({ task: "keyed", subtask }), l] as const));
    const tasks: CheckpointMeta["tasks"] = c.tasks.map((t) => {
      const changelog = t.task === "keyed" ? taken[t.subtask] : undefined;
      if (changelog !== undefined) changelogs.set(taskFile(t), { ...changelog, bytes: t.state?.byteLength ?? 0 });
      return {
        task: t.task,
        subtask: t.subtask,
        ...(t.state ? { file: taskFile(t) } : {}),
        bytes: t.state?.byteLength ?? 0,
        ...(t.keyGroups ? { keyGroups: t.keyGroups } : {}),
        alignmentMs: t.alignmentMs,
        ...(t.disk ? { disk: t.disk } : {}),
        ...(changelog?.chain ? { changelog: chainMeta(changelog.chain) } : {}),
      };
    });
    const extra = { parallelism: plan.parallelism, maxParallelism: plan.maxParallelism, tasks };
    return this.commitCheckpoint(c.id, c.startedAt, c.t0, c.tasks, c.positions, extra, undefined, changelogs.size > 0 ? changelogs : undefined, !c.final);
  }

  /**
   * The two-phase commit of a checkpoint whose state is taken: sinks prepare, `chk-<id>` written,
   * sinks commit, marked committed. When every output writes before commit (at-least-once Kafka),
   * the part after the sinks' flush runs on while the loop (a parallel job: its sink task) takes the
   * next records (Flink's asynchronous checkpoint phase): an engine stalled for the folder's fsync
   * and marker delayed every record arriving meanwhile. One checkpoint at a time still: the next
   * one waits for it (a parallel job's next barrier, through ParallelContext.settle).
   */
  private async commitCheckpoint(
    id: number,
    started: number,
    t0: number,
    state: CheckpointState,
    sources: Record<string, JsonValue>,
    extra: Pick<CheckpointMeta, "parallelism" | "maxParallelism" | "tasks" | "disk" | "changelog">,
    hold?: SnapshotHold,
    changelogs?: TaskChangelogs,
    /** False for a parallel job's last checkpoint: the job ends once it is committed. */
    mayOverlap = true,
  ): Promise<void> {
    const failed = (err: unknown): unknown => {
      if (!isFenced(err)) this.checkpointFailed({ id, triggeredAt: started, failedAt: this.opts.clock.now(), reason: errorMessage(err) });
      return err;
    };
    let finish: () => Promise<void>;
    try {
      finish = await this.twoPhaseCommit(id, started, t0, state, sources, extra, hold, changelogs);
    } catch (err) {
      throw failed(err);
    }
    const overlap = mayOverlap && this.overlapsCommit();
    const done = finish().catch((err: unknown) => {
      throw failed(err);
    });
    if (!overlap) return done;
    this.log.debug(`checkpoint ${id}: sinks flushed; records flow again while its folder is written and marked`);
    this.finishing = done.catch((err: unknown) => {
      this.finishingFailure ??= err;
      // The sequential loop sees it at its next step; a parallel job's tasks are told now.
      this.parallel?.fail(err);
    });
  }

  /** Every output's phase 2 is a no-op and nothing waits on this checkpoint (a savepoint, a routing switch). */
  private overlapsCommit(): boolean {
    if (this.status !== "running" || this.checkpointWanted || this.savepointWaiters.length > 0) return false;
    return [...this.sinks.values()].every((s) => s.writesBeforeCommit === true) && this.requireDeadLetters().writesBeforeCommit === true;
  }

  /**
   * Waits for the previous checkpoint's second half, if still running (rethrows its failure), and
   * for a whole state being published (startBaseWrite). The caller takes the next checkpoint's id
   * at once after this, with no await between.
   */
  private async settleCheckpoint(): Promise<void> {
    const f = this.finishing;
    this.finishing = undefined;
    if (f) await f;
    if (this.finishingFailure !== undefined) throw this.finishingFailure;
    while (this.publishing !== undefined) await this.publishing;
  }

  private checkpointFailed(f: FailedCheckpoint): void {
    this.failedCheckpoints.push(f);
    if (this.failedCheckpoints.length > HISTORY) this.failedCheckpoints.shift();
    this.opts.onCheckpointFailed?.(f);
  }

  /** Phase 1 (sinks prepare); resolves with the rest (write, commit, mark), for commitCheckpoint to run. */
  private async twoPhaseCommit(...[id, started, t0, state, sources, extra, hold, changelogs]: Parameters<JobDriver["commitCheckpoint"]>): Promise<() => Promise<void>> {
    const snapshotBytes = Array.isArray(state) ? state.reduce((n, t) => n + (t.state?.byteLength ?? 0), 0) : state.byteLength;
    // Disk-backend chains: the whole state a restore reads, and what this checkpoint added to it.
    const chains = [extra.disk, ...(extra.tasks ?? []).map((t) => t.disk)].filter((c) => c !== undefined);
    // A changelog checkpoint: its own files hold the changes, and a restore reads their chains too.
    let changelogBytes = 0;
    // Links newer than the last completed checkpoint are new with this one: the changes written ahead of its barrier.
    let aheadBytes = 0;
    const lastId = this.lastCheckpoint?.id ?? 0;
    for (const c of changelogs?.values() ?? []) {
      for (const l of c.chain ?? []) {
        changelogBytes += l.bytes;
        if (l.id > lastId) aheadBytes += l.bytes;
      }
    }
    const stateBytes = snapshotBytes + changelogBytes + chains.reduce((n, c) => n + c.files.reduce((m, f) => m + f.bytes, 0), 0);
    const incrementalBytes = snapshotBytes + aheadBytes + chains.reduce((n, c) => n + c.files.filter((f) => f.checkpoint === id).reduce((m, f) => m + f.bytes, 0), 0);
    const sinkList = [...this.sinks.values()];
    // Where a checkpoint's time goes, for the debug line: snapshot, sinks' flush, write, commit, marker.
    const phase = [performance.now()];
    const prepared = await Promise.all(sinkList.map((s) => s.prepareCommit(id)));
    const deadLetters = await this.requireDeadLetters().prepareCommit(id);
    const sinks: Record<string, JsonValue> = {};
    sinkList.forEach((s, i) => {
      sinks[s.nodeId] = prepared[i] ?? null;
    });
    crashPoint("after-precommit");
    phase.push(performance.now());
    return () => this.finishCheckpoint({ id, started, t0, state, sources, extra, sinkList, prepared, sinks, deadLetters, phase, stateBytes, incrementalBytes, hold, changelogs });
  }

  /** Phase 2 of a prepared checkpoint: `chk-<id>` written durably, sinks commit, marked committed, sources told. */
  private async finishCheckpoint(c: PreparedCheckpoint): Promise<void> {
    const { checkpoints, clock } = this.opts;
    const { id, started, t0, state, sources, extra, sinkList, prepared, sinks, deadLetters, phase, stateBytes, incrementalBytes } = c;
    try {
      await checkpoints.write(
        {
          format: CHECKPOINT_FORMAT,
          id,
          jobId: this.jobId,
          pipeline: { name: this.opts.doc.name, digest: this.digest },
          createdAt: new Date(started).toISOString(),
          processingTime: started,
          stateBytes,
          sources,
          sinks,
          deadLetters,
          graph: graphOf(this.opts.doc),
          ...extra,
        },
        state,
      );
    } finally {
      c.hold?.release();
    }
    if (c.changelogs) this.changelogsWritten(id, c.changelogs);
    crashPoint("after-checkpoint-write");
    phase.push(performance.now());
    await Promise.all(sinkList.map((s, i) => s.commit(id, prepared[i] ?? null)));
    crashPoint("after-sinks-commit");
    await this.requireDeadLetters().commit(id, deadLetters);
    crashPoint("after-commit");
    phase.push(performance.now());
    await checkpoints.markCommitted(id);
    phase.push(performance.now());
    // A runner fenced meanwhile must not commit stale offsets to the job's consumer group.
    await checkpoints.checkOwner?.(`the group offsets of checkpoint ${id}`);
    for (const source of this.sources) await source.checkpointCompleted?.(sources[source.nodeId] ?? null);
    this.checkpointsCompleted++;
    const acks: CheckpointAck[] = extra.tasks?.map((t) => ({ task: t.task, subtask: t.subtask, bytes: t.bytes, alignmentMs: t.alignmentMs, ...(t.keyGroups ? { keyGroups: t.keyGroups } : {}) })) ?? [
      { task: "source", subtask: 0, bytes: stateBytes, alignmentMs: 0 },
    ];
    const stats: CheckpointStats = {
      id,
      triggeredAt: started,
      incrementalBytes,
      completedAt: clock.now(),
      durationMs: Math.round((performance.now() - t0) * 10) / 10,
      stateBytes,
      path: checkpoints.pathOf(id),
      alignmentMs: Math.max(0, ...acks.map((a) => a.alignmentMs)),
      acks,
    };
    this.lastCheckpoint = stats;
    this.checkpointHistory.push(stats);
    if (this.checkpointHistory.length > HISTORY) this.checkpointHistory.shift();
    const ms = (i: number) => Math.round(phase[i + 1]! - phase[i]!);
    this.log.debug(
      `checkpoint ${id} done in ${stats.durationMs} ms (${stateBytes} state bytes; snapshot ${Math.round(phase[0]! - t0)} ms, sinks flushed ${ms(0)} ms, written ${ms(1)} ms, committed ${ms(2)} ms, marked ${ms(3)} ms)`,
    );
    this.checkpointWanted = false;
    const waiters = this.savepointWaiters;
    this.savepointWaiters = [];
    const from = checkpoints.pathOf(id);
    for (const w of waiters) {
      // Copied before the loop goes on, so a later checkpoint cannot prune it meanwhile.
      if (from === undefined) w.reject(new Error("no checkpoint folder"));
      else await writeSavepoint(from, w.root, this.jobId).then(w.resolve, w.reject);
    }
    this.opts.onCheckpoint?.(stats, sources);
  }

  /** Names this run's chain files apart from another run's of the same checkpoint id. */
  private readonly diskSuffix = `${process.pid.toString(36)}${Date.now().toString(36)}`;

  private async closeAll(): Promise<void> {
    await this.finishing;
    await this.baseWrite;
    await this.compactor?.close();
    for (const w of this.savepointWaiters.splice(0)) w.reject(new Error(`job "${this.jobId}" ended before its savepoint's checkpoint completed`));
    this.abort.abort(new Error(this.stopRequested ?? "job ended"));
    this.queue.close();
    const closing = [...this.sources, ...this.sinks.values(), ...(this.deadLetters ? [this.deadLetters] : [])];
    const timeout = this.opts.stopTimeoutMs ?? 30_000;
    for (const c of closing) {
      try {
        await withTimeout(c.close(), timeout, `closing ${"nodeId" in c ? `node "${c.nodeId}"` : "the dead-letter output"}`);
      } catch (err) {
        this.log.warn(errorMessage(err));
      }
    }
    try {
      await withTimeout(this.opts.connectors.close(), timeout, "closing connections");
    } catch (err) {
      this.log.warn(errorMessage(err));
    }
    this.disk?.close();
    if (this.opts.doc.settings.stateBackend === "disk") rmSync(stateDirFor(this.jobId), { recursive: true, force: true });
  }

  summary(): JobSummary {
    const nodes: JobSummary["nodes"] = {};
    for (const [id, m] of Object.entries(this.metrics())) nodes[id] = { ...m, type: this.nodeTypes.get(id) ?? "?" };
    return {
      jobId: this.jobId,
      pipeline: this.opts.doc.name,
      status: this.status === "finished" ? "finished" : "stopped",
      restoredFrom: this.restoredFrom,
      nodes,
      deadLetters: this.deadLetterCount,
      deadLetterTarget: this.deadLetters?.target ?? "",
      sinks: [...this.sinks.values()].map((s) => ({ nodeId: s.nodeId, target: s.target })),
      checkpoints: this.checkpointsCompleted,
      lastCheckpoint: this.lastCheckpoint,
      checkpointDir: this.opts.checkpoints.location,
      durationMs: this.opts.clock.now() - this.startedAt,
    };
  }

  private requireJob(): LocalJob {
    if (!this.job) throw new Error("job not started");
    return this.job;
  }
  private requireDeadLetters(): DeadLetterSink {
    if (!this.deadLetters) throw new Error("dead-letter output not opened");
    return this.deadLetters;
  }
}

function hasErrorNamed(err: unknown, name: string): boolean {
  for (let e: unknown = err, depth = 0; typeof e === "object" && e !== null && depth < 6; depth++) {
    if ("name" in e && e.name === name) return true;
    e = "cause" in e ? e.cause : undefined;
  }
  return false;
}

async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms; giving up`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
