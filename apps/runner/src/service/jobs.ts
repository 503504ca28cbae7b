// The service's jobs: each deployment runs as one JobDriver with its own checkpoint folder. A job
// that fails never takes the service down: it is marked failed with the reason and restarted from
// its newest checkpoint after an exponential delay (1 s doubling to 2 min, reset after 10 min
// without failure), until it is stopped.
import path from "node:path";
import type { PipelineDocument } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import { createJobDriver } from "../job/create";
import { isFenced } from "../job/lease";
import type { CheckpointStats, JobDriver, JobNodeMetrics } from "../job/driver";
import type { AnsweredState, FailedCheckpoint, ParallelExecution, SubtaskMetrics } from "../exec/parallel";
import type { Clock } from "../job/clock";
import { systemClock } from "../job/clock";
import type { SourceInputMetrics } from "../io/types";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import { JobOps } from "../ops/job-ops";
import type { TaskTimes } from "../exec/channel";
import { RuleRouting, routeConnectors, type RoutingSwitch, type RoutingView } from "../job/routing";
import type { BranchMode, ComposedRuleJob } from "../job/rule-job";
import { confinePath } from "../io/confine";
import { confineJobFiles, conflictWithRunning, jobOutputs, OutputConflictError, sharedWithinJob, type JobOutput } from "../job/outputs";

export type ManagedStatus = "starting" | "running" | "restarting" | "stopping" | "finished" | "stopped" | "failed";

export interface RestartPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** A job running this long without failure starts again from the initial delay. */
  resetAfterMs: number;
  /** Give up after this many consecutive failures (Infinity: never). */
  maxAttempts: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { initialDelayMs: 1_000, maxDelayMs: 120_000, resetAfterMs: 600_000, maxAttempts: Number.POSITIVE_INFINITY };

/** The delay before restart number `failures` in a row: initialDelayMs doubling, capped at maxDelayMs. */
export function restartDelayMs(policy: RestartPolicy, failures: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, failures - 1));
}

export interface JobView {
  id: string;
  jobId: string;
  deploymentId: string;
  pipeline: string;
  status: ManagedStatus;
  failure: string | null;
  restarts: number;
  nextRestartAt: string | null;
  createdAt: string;
  startedAt: string | null;
  deadLetters: number;
  lastCheckpoint: (CheckpointStats & { completedAtIso: string }) | null;
  checkpointDir: string;
  nodes: Record<string, JobNodeMetrics & { type: string }>;
  /** Kafka consumer lag per source node and partition. */
  sources: Record<string, SourceInputMetrics>;
  /** A rule job's branches: each version's mode, the switch under way, completed switches. */
  routing?: RoutingView;
}

/** Who wants to know what happens to jobs (the Postgres reporter). Implementations must not throw. */
export interface JobEvents {
  status(job: ManagedJob, status: ManagedStatus): void;
  checkpoint(job: ManagedJob, stats: CheckpointStats): void;
  /** A checkpoint that failed or was aborted, with its reason. */
  checkpointFailed?(job: ManagedJob, failed: FailedCheckpoint): void;
}

export class ManagedJob {
  private current: ManagedStatus = "starting";
  failure: string | undefined;
  restarts = 0;
  /** Epochs replayed by this job's earlier runs (../job/recover-epoch.ts); see epochsReplayed. */
  private replayedBefore = 0;
  private consecutiveFailures = 0;
  private driver: JobDriver | undefined;
  private runStartedAt: number | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private nextRestartAt: number | undefined;
  private stopRequested = false;
  /** A deploy's restoreFrom: the first run starts there; once a checkpoint completes, restarts use the job's own. */
  private restoreFrom: string | undefined;
  private finished: Promise<void> = Promise.resolve();
  readonly createdAt: number;
  readonly checkpointDir: string;
  private readonly nodeTypes: Map<string, string>;
  /** Live operations (sink throttles, sink times), kept across restarts. */
  readonly ops: JobOps;
  /** A rule job's routing of its branches' alerts (../job/routing.ts), kept across restarts. */
  readonly routing: RuleRouting | undefined;
  /** What the job writes (files, topics, dead letters): no other running job may write them. */
  readonly outputs: readonly JobOutput[];

  constructor(
    readonly deploymentId: string,
    readonly doc: PipelineDocument,
    private readonly deps: { env: RunnerEnv; log: Logger; clock: Clock; policy: RestartPolicy; checkpointIntervalMs?: number; events?: JobEvents; restore?: RestoreOptions; rule?: ComposedRuleJob; outputs?: readonly JobOutput[] },
  ) {
    this.outputs = deps.outputs ?? [];
    this.restoreFrom = deps.restore?.restoreFrom;
    this.createdAt = deps.clock.now();
    this.checkpointDir = path.join(deps.env.checkpointRoot, deploymentId);
    this.nodeTypes = new Map(doc.nodes.map((n) => [n.id, n.type]));
    this.ops = new JobOps(new Set(doc.nodes.filter((n) => n.type.startsWith("sink.")).map((n) => n.id)));
    this.routing = deps.rule ? new RuleRouting(deps.rule.initialModes, () => deps.clock.now()) : undefined;
  }

  get status(): ManagedStatus {
    return this.current;
  }
  private set status(next: ManagedStatus) {
    if (next === this.current) return;
    this.current = next;
    this.deps.events?.status(this, next);
  }

  get active(): boolean {
    return this.status === "starting" || this.status === "running" || this.status === "restarting" || this.status === "stopping";
  }

  /** Times a run found every transaction of an uncommitted checkpoint lost and replayed its epoch. */
  get epochsReplayed(): number {
    return this.replayedBefore + (this.driver?.epochsReplayed ?? 0);
  }

  start(): void {
    const { log, clock } = this.deps;
    this.restartTimer = undefined;
    this.nextRestartAt = undefined;
    this.status = "starting";
    this.runStartedAt = clock.now();
    // A switch bound to a checkpoint the previous run never completed did not happen.
    this.routing?.abort("the job restarted before its checkpoint completed");
    let driver: JobDriver;
    try {
      driver = this.createDriver();
    } catch (err) {
      this.finished = Promise.resolve();
      this.onFailure(err);
      return;
    }
    this.replayedBefore += this.driver?.epochsReplayed ?? 0;
    this.driver = driver;
    this.ops.partitionWatermarks = (nodeId) => driver.sourcePartitionWatermarks(nodeId);
    this.finished = driver.run().then(
      () => {
        this.status = this.stopRequested || driver.status === "stopped" ? "stopped" : "finished";
        this.routing?.abort(`the job ${this.status}`);
        log.info(`job ${this.status}`);
      },
      (err: unknown) => this.onFailure(err),
    );
  }

  private createDriver(): JobDriver {
    const { env, log, clock } = this.deps;
    return createJobDriver({
      doc: this.doc,
      jobId: this.deploymentId,
      baseDir: env.dataDir,
      env,
      log,
      checkpointDir: this.checkpointDir,
      clock,
      ...(this.deps.checkpointIntervalMs !== undefined ? { checkpointIntervalMs: this.deps.checkpointIntervalMs } : {}),
      onStatus: (s) => {
        if (s === "running" && this.status === "starting") this.status = "running";
      },
      onCheckpointFailed: (failed) => this.deps.events?.checkpointFailed?.(this, failed),
      onCheckpoint: (stats, sources) => {
        this.restoreFrom = undefined;
        this.routing?.completed(stats.id, sources);
        this.deps.events?.checkpoint(this, stats);
      },
      ...(this.restoreFrom !== undefined ? { restoreFrom: this.restoreFrom } : {}),
      ...(this.deps.restore?.allowNonRestoredState ? { allowNonRestoredState: true } : {}),
      ops: this.ops,
      ...(this.routing && this.deps.rule ? { wrapConnectors: routedBy(this.deps.rule, this.routing) } : {}),
    });
  }

  private onFailure(err: unknown): void {
    const { log, clock, policy } = this.deps;
    this.failure = errorMessage(err);
    this.routing?.abort(`the job failed: ${this.failure}`);
    if (this.stopRequested) {
      this.status = "stopped";
      return;
    }
    if (isFenced(err)) {
      // Another runner took this job over (./job/lease.ts): restarting would fence it in turn.
      this.status = "failed";
      log.error(`job stopped for good: ${this.failure}`);
      return;
    }
    if (this.runStartedAt !== undefined && clock.now() - this.runStartedAt >= policy.resetAfterMs) this.consecutiveFailures = 0;
    this.consecutiveFailures++;
    if (this.consecutiveFailures > policy.maxAttempts) {
      this.status = "failed";
      log.error(`job failed ${this.consecutiveFailures} times in a row, giving up: ${this.failure}`);
      return;
    }
    const delay = restartDelayMs(policy, this.consecutiveFailures);
    this.status = "restarting";
    this.nextRestartAt = clock.now() + delay;
    log.error(`job failed: ${this.failure}; restarting from its last checkpoint in ${Math.round(delay / 100) / 10} s`);
    this.restartTimer = setTimeout(() => {
      if (this.stopRequested) return;
      this.restarts++;
      this.start();
    }, delay);
  }

  /** Graceful stop (final checkpoint); resolves once the job has let go of everything. */
  async stop(): Promise<void> {
    this.stopRequested = true;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
      this.status = "stopped";
    }
    if (this.status === "starting" || this.status === "running") this.status = "stopping";
    this.driver?.stop("stopped through the API");
    await this.finished;
    if (this.status === "stopping") this.status = "stopped";
  }

  /**
   * A rule job's routing switch (promotion, rollback): the versions' new modes take effect at the
   * next checkpoint's barrier, taken at once; resolves when that checkpoint completed, with its id
   * and the sources' positions at the boundary.
   */
  switchRouting(changes: Record<string, BranchMode>): Promise<RoutingSwitch> {
    if (!this.routing) return Promise.reject(new JobStateError(`job "${this.deploymentId}" is not a rule job: it has no versions to route`));
    if (!this.driver || this.status !== "running") return Promise.reject(new JobStateError(`job "${this.deploymentId}" is ${this.status}; a routing switch needs a running job`));
    const done = this.routing.request(changes);
    this.driver.requestCheckpoint();
    return done;
  }

  /** Queryable state of the current run: `key`'s state and timers at `nodeId`, undefined when not running. */
  queryState(nodeId: string, key: string): Promise<AnsweredState | undefined> {
    return this.driver ? this.driver.queryState(nodeId, key) : Promise.resolve(undefined);
  }

  /** Takes a savepoint of the running job into a new folder under `root`; resolves with its path. */
  savepoint(root: string): Promise<string> {
    if (!this.driver || this.status !== "running") return Promise.reject(new JobStateError(`job "${this.deploymentId}" is ${this.status}; a savepoint needs a running job`));
    return this.driver.savepoint(root);
  }

  /** Graceful stop whose final checkpoint is kept as a savepoint under `root`; resolves with its path. */
  async stopWithSavepoint(root: string): Promise<string> {
    if (!this.driver || this.status !== "running") throw new JobStateError(`job "${this.deploymentId}" is ${this.status}; stop with a savepoint needs a running job`);
    const driver = this.driver;
    await this.stop();
    if (driver.status !== "stopped" && driver.status !== "finished") throw new Error(`job "${this.deploymentId}" did not stop cleanly (${driver.failure ?? driver.status}); no savepoint taken`);
    return driver.savepointOfLast(root);
  }

  metrics(): Record<string, JobNodeMetrics> {
    return this.driver?.metrics() ?? {};
  }

  sourceMetrics(): Record<string, SourceInputMetrics> {
    return this.driver?.sourceMetrics() ?? {};
  }

  /** Per task and subtask of a parallel job (busy / backpressured / idle ms per second, queues); empty otherwise. */
  subtaskMetrics(): SubtaskMetrics[] {
    return this.driver?.subtaskMetrics() ?? [];
  }

  /** The parallel runtime of the current run of a parallel job (live operations: checkpoint progress, key skew). */
  get parallelExecution(): ParallelExecution | undefined {
    return this.driver?.parallelExecution;
  }

  /** The engine loop's busy / backpressured / idle ms per second (single-threaded jobs; parallel ones report subtaskMetrics). */
  engineTimes(): TaskTimes | undefined {
    return this.driver?.engineTimes();
  }

  /** The folder of the newest completed checkpoint of the current run (it may be pruned by a later one). */
  get lastCheckpointPath(): string | undefined {
    return this.driver?.lastCheckpoint?.path;
  }

  /** The newest completed checkpoints of the current run, oldest first. */
  checkpoints(): readonly CheckpointStats[] {
    return this.driver?.checkpointHistory ?? [];
  }

  /** The current run's failed or aborted checkpoints with their reason, oldest first. */
  failedCheckpoints(): readonly FailedCheckpoint[] {
    return this.driver?.failedCheckpoints ?? [];
  }

  view(): JobView {
    const d = this.driver;
    const nodes: JobView["nodes"] = {};
    for (const [id, m] of Object.entries(this.metrics())) nodes[id] = { ...m, type: this.nodeTypes.get(id) ?? "?" };
    const cp = d?.lastCheckpoint;
    return {
      id: this.deploymentId,
      jobId: this.deploymentId,
      deploymentId: this.deploymentId,
      pipeline: this.doc.name,
      status: this.status,
      failure: this.failure ?? null,
      restarts: this.restarts,
      nextRestartAt: this.nextRestartAt !== undefined ? new Date(this.nextRestartAt).toISOString() : null,
      createdAt: new Date(this.createdAt).toISOString(),
      startedAt: this.runStartedAt !== undefined ? new Date(this.runStartedAt).toISOString() : null,
      deadLetters: d?.deadLetterCount ?? 0,
      lastCheckpoint: cp ? { ...cp, completedAtIso: new Date(cp.completedAt).toISOString() } : null,
      checkpointDir: this.checkpointDir,
      nodes,
      sources: this.sourceMetrics(),
      ...(this.routing ? { routing: this.routing.view() } : {}),
    };
  }
}

export class DeployConflictError extends Error {}
/** A job control request the job's state does not allow (HTTP 409). */
export class JobStateError extends Error {}

/** Where a deployment starts from: a checkpoint or savepoint folder, and whether dropped nodes' state may be lost. */
export interface RestoreOptions {
  restoreFrom?: string;
  allowNonRestoredState?: boolean;
}

export interface JobManagerOptions {
  clock?: Clock;
  policy?: Partial<RestartPolicy>;
  /** Overrides every pipeline's checkpointIntervalMs (tests). */
  checkpointIntervalMs?: number;
  events?: JobEvents;
}

export class JobManager {
  private readonly jobs = new Map<string, ManagedJob>();
  private readonly clock: Clock;
  private readonly policy: RestartPolicy;

  constructor(
    private readonly env: RunnerEnv,
    private readonly log: Logger,
    opts: JobManagerOptions = {},
  ) {
    this.clock = opts.clock ?? systemClock;
    this.policy = { ...DEFAULT_RESTART_POLICY, ...opts.policy };
    this.checkpointIntervalMs = opts.checkpointIntervalMs;
    this.events = opts.events;
  }
  private readonly checkpointIntervalMs: number | undefined;
  private readonly events: JobEvents | undefined;

  /**
   * Starts a deployment (a rule job with `rule`). Refuses an id whose job is still active (replaces one
   * that has ended), a file outside the data folder or a restore outside the checkpoint root
   * (PathOutsideFolderError), and an output that another running job writes (OutputConflictError).
   */
  deploy(deploymentId: string, doc: PipelineDocument, restore?: RestoreOptions, rule?: ComposedRuleJob): ManagedJob {
    const existing = this.jobs.get(deploymentId);
    if (existing?.active) throw new DeployConflictError(`job "${deploymentId}" is already ${existing.status}; stop it first (DELETE /jobs/${deploymentId})`);
    if (restore?.restoreFrom !== undefined) {
      restore = { ...restore, restoreFrom: confinePath(restore.restoreFrom, "restoreFrom", { root: this.env.checkpointRoot, folder: "checkpoint folder" }) };
    }
    confineJobFiles(doc, this.env.dataDir);
    const outputs = jobOutputs(doc, this.env.dataDir, rule);
    const within = sharedWithinJob(outputs);
    if (within.length > 0) throw new OutputConflictError(`job "${deploymentId}": ${within.join("; ")}`);
    const conflict = conflictWithRunning(deploymentId, outputs, this.list().filter((j) => j.active).map((j) => ({ id: j.deploymentId, outputs: j.outputs })));
    if (conflict !== undefined) throw new OutputConflictError(conflict);
    const job = new ManagedJob(deploymentId, doc, {
      outputs,
      env: this.env,
      log: this.log.child(`job ${deploymentId}`),
      clock: this.clock,
      policy: this.policy,
      ...(this.checkpointIntervalMs !== undefined ? { checkpointIntervalMs: this.checkpointIntervalMs } : {}),
      ...(this.events ? { events: this.events } : {}),
      ...(restore ? { restore } : {}),
      ...(rule ? { rule } : {}),
    });
    this.jobs.set(deploymentId, job);
    job.start();
    return job;
  }

  get(id: string): ManagedJob | undefined {
    return this.jobs.get(id);
  }

  list(): ManagedJob[] {
    return [...this.jobs.values()];
  }

  async stop(id: string): Promise<ManagedJob | undefined> {
    const job = this.jobs.get(id);
    if (!job) return undefined;
    await job.stop();
    return job;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.list().map((j) => j.stop().catch((err: unknown) => this.log.error(`stopping job ${j.deploymentId}: ${errorMessage(err)}`))));
  }
}

function routedBy(rule: ComposedRuleJob, routing: RuleRouting) {
  return (plain: Parameters<typeof routeConnectors>[0]) => routeConnectors(plain, rule.routes, routing);
}
