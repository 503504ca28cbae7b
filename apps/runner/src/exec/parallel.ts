// A parallel job (settings.parallelism > 1): the coordinator, the source task and the sink task on
// the main thread, the keyed subtasks in worker threads (see ./plan for the task DAG).
//
// Source task: one loop over the sources' batches, as the single-threaded driver; its LocalJob runs
// the chained head of the graph, and what it hands to keyed nodes is routed by key group into one
// output buffer per subtask, sent over credit-based channels (./channel). Sink task: the keyed
// subtasks' and the source task's sink records and dead letters, written to the sinks.
//
// Checkpoints (aligned barriers, Flink's Chandy-Lamport variant): the coordinator lets the source
// task inject barrier n between two batches (interval, minimum pause, timeout, one at a time); the
// source task snapshots its LocalJob and source positions there. Each subtask aligns, forwards the
// barrier, snapshots, and acknowledges with its bytes and alignment time. When the sink task has
// aligned barrier n on all its channels, everything before the barrier has been written: with every
// acknowledgement in, the driver's two-phase commit runs as today (sinks prepare, `chk-n/` with one
// file per task and `_metadata.json` written atomically, sinks commit, `_committed`).
import { Worker } from "node:worker_threads";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import {
  keyGroupOf,
  computeOperatorIndexForKeyGroup,
  keptColumnsVerification,
  LocalJob,
  mergeJobSnapshots,
  MIN_WATERMARK,
  type ExchangeOutput,
  type JobEmission,
  type JsonObject,
  type JsonValue,
  type KeyGroupRange,
  type KeySelector,
  type KeyStateView,
  type NodeMetrics,
  type PipelineDocument,
  type SnapshotPart,
} from "@keyflow/operators";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import { SerializedSinkRecord, type RecordSource, type SourceBatch } from "../io/types";
import { BatchQueue } from "../job/batch-queue";
import type { StoredCheckpoint, TaskCheckpointState } from "../job/checkpoints";
import type { TaskChangelog } from "../job/changelog-chains";
import type { DiskChain } from "../state/chain-files";
import type { Clock } from "../job/clock";
import { CreditSender, InputGate, TimeAccount, type GateNext, type TaskTimes } from "./channel";
import { routeKeySelectors, type ParallelPlan } from "./plan";
import type { FromSubtask, SubtaskInit, SubtaskReport, ToSubtask } from "./protocol";
import { KeySkew } from "../ops/skew";
import { pushSourceBatch, type PartitionActivity } from "../job/push-batch";
import { nextCheckpointDue } from "../job/checkpoint-schedule";
import { startSources } from "../job/source-order";
import { checkJobStateBudget, stateBytesByNode } from "../job/state-budget";
import { codec, DEAD, IDLE, OutputBuffer, postItem, REC, SINK, SINK_JSON, toItem, type CodecName, type Payload, type WireMessage } from "./wire";
import { workerBundle } from "./worker-bundle";

export interface ExchangeOptions {
  /** Records per network buffer (default 1024). */
  bufferRecords?: number;
  /** Buffers, i.e. credits, per channel (default 8): at most bufferRecords × this records in flight on a channel. */
  buffersPerChannel?: number;
  /** How buffers cross threads (default "clone": structured clone; "msgpack": MessagePack bytes, transferred). */
  codec?: CodecName;
}

/** One task or subtask as metrics show it. */
export interface SubtaskMetrics extends TaskTimes {
  task: "source" | "keyed" | "sink";
  subtask: number;
  /** The nodes chained in the task. */
  nodes: string[];
  keyGroupRange?: KeyGroupRange;
  /** Per node figures of this subtask. */
  metrics: Record<string, NodeMetrics>;
  /** Records on the task's output channels not yet consumed downstream, and the most there were. */
  queuedRecords: number;
  maxQueuedRecords: number;
  /** The bound on queuedRecords per output channel (credits × records per buffer). */
  queueBoundRecords: number;
  /** Cumulative ms busy / backpressured / idle since the task started. */
  totals: { busy: number; backPressured: number; idle: number };
}

/** A state query's answer and the task that gave it. */
export interface AnsweredState {
  view: KeyStateView;
  task: "source" | "keyed" | "single";
  index: number;
}

/** What a completed checkpoint hands the driver for its two-phase commit. */
export interface ParallelCheckpoint {
  id: number;
  startedAt: number;
  t0: number;
  tasks: TaskCheckpointState[];
  positions: Record<string, JsonValue>;
  /** The job's last checkpoint (end of input or stop): its commit is not left running behind the job. */
  final: boolean;
  /** By keyed subtask: the changelog snapshot it took (ParallelContext.changelogFor), if any. */
  changelogs: Array<TaskChangelog | undefined>;
}

/** What the sink task hands the driver: the engines' emissions, and sink records a keyed subtask serialized (wire.ts, SINK_JSON). */
export type TaskEmission = JobEmission | { kind: "serializedSink"; nodeId: string; record: SerializedSinkRecord };

export interface ParallelContext {
  doc: PipelineDocument;
  plan: ParallelPlan;
  log: Logger;
  clock: Clock;
  sources: RecordSource[];
  restored: StoredCheckpoint | undefined;
  /** Writes sink records and dead letters (the driver's routing to its sinks). */
  write(emissions: TaskEmission[]): Promise<void>;
  /**
   * Runs the driver's two-phase commit for a checkpoint every task acknowledged. It may resolve once
   * the sinks have prepared, the rest going on beside the next records (at-least-once outputs: see
   * JobDriver.commitCheckpoint); `settle` then waits for that rest.
   */
  complete(c: ParallelCheckpoint): Promise<void>;
  /** Waits for the last checkpoint's second half, if still going on; rethrows its failure. */
  settle?(): Promise<void>;
  /** Told of each aborted checkpoint (the driver records it). Must not throw. */
  aborted?(f: FailedCheckpoint): void;
  /**
   * Heap state kept in a checkpoint folder: the changelog snapshot keyed subtask `subtask` takes at
   * the next barrier (only its changes over a chain already written, or its whole state to start
   * one); undefined: a plain snapshot.
   */
  changelogFor?(subtask: number): TaskChangelog | undefined;
  /** Starts writing a task's state file of checkpoint `id` as soon as the task acknowledged (CheckpointStore.stageTaskState). */
  stage?(id: number, task: { task: "source" | "keyed"; subtask: number }, state: Uint8Array): void;
  /** Keyed subtask `subtask`'s changes since its last changelog snapshot, taken ahead of the barrier after `after` (FromSubtask "changes"). */
  changesAhead?(subtask: number, after: number, state: Uint8Array): void;
  nextCheckpointId(): number;
  checkpointIntervalMs: number;
  tickMs: number;
  signal: AbortSignal;
  stopRequested(): boolean;
  exchange?: ExchangeOptions;
  /** settings.stateBackend "disk": where the keyed subtasks' stores live, and where their chain files go (undefined: checkpoints not kept). */
  disk?: { stateDir: string; sharedDir: string | undefined; suffix: string };
}

type Item = { kind: "batch"; source: RecordSource; batch: SourceBatch } | { kind: "end"; source: RecordSource } | { kind: "error"; source: RecordSource; error: unknown };

interface PendingCheckpoint {
  id: number;
  /** When it was due (0: asked for now, a savepoint), and when its barrier was injected. */
  dueAt: number;
  startedAt: number;
  t0: number;
  head: Uint8Array;
  positions: Record<string, JsonValue>;
  final: boolean;
  changelogs: Array<TaskChangelog | undefined>;
  acks: Map<number, { state: Uint8Array; alignmentMs: number; disk?: DiskChain | undefined }>;
  sinkAligned: boolean;
  allAcked: () => void;
  acked: Promise<void>;
  timer: NodeJS.Timeout | undefined;
  done: Promise<void>;
  finish: () => void;
}

/** A keyed subtask's module, run from its bundle (./worker-bundle.ts) or, failing that, from source through tsx. */
const SUBTASK_MODULE = new URL("./worker.ts", import.meta.url);
const SUBTASK_FROM_SOURCE = new URL("./worker-entry.mjs", import.meta.url);

/** Starts building the keyed subtasks' bundle (a job calls it before it connects its sources and sinks). */
export function prepareKeyedSubtasks(): void {
  // A failure is reported by the execution that needs the bundle.
  workerBundle(SUBTASK_MODULE).catch(() => {});
}

/** The checkpoint in flight, as live operations show it: which task acknowledged. */
export interface CheckpointProgress {
  id: number;
  triggeredAt: number;
  /** `node`: a sink of a single-threaded job, acknowledged once it prepared its commit. */
  tasks: Array<{ task: "source" | "keyed" | "sink"; subtask: number; node?: string; acknowledged: boolean; alignmentMs?: number }>;
}

/** A checkpoint that was aborted, and why. */
export interface FailedCheckpoint {
  id: number;
  triggeredAt: number;
  failedAt: number;
  reason: string;
}

export class ParallelExecution {
  private readonly plan: ParallelPlan;
  private readonly n: number;
  private readonly bufferRecords: number;
  private readonly buffersPerChannel: number;
  private readonly codecName: CodecName;
  private readonly wire: ReturnType<typeof codec>;
  private headJob!: LocalJob;
  private readonly workers: Worker[] = [];
  private readonly reports: Array<SubtaskReport | undefined> = [];
  private readonly workerFinished: Array<Promise<void>> = [];
  private readonly toWorkers: CreditSender<Payload>[] = [];
  private readonly sinkPorts: MessagePort[] = [];
  private readonly outBuffers: OutputBuffer[] = [];
  private localSender!: CreditSender<Payload>;
  private readonly localBuffer: OutputBuffer;
  private readonly sinkGate: InputGate<Payload>;
  private wakeSink: (() => void) | undefined;
  private readonly sourceTime = new TimeAccount();
  private readonly sinkTime = new TimeAccount();
  private readonly sinkCounts = new Map<string, number>();
  private pending: PendingCheckpoint | undefined;
  /** State queries waiting for their subtask's answer, by id. */
  private readonly stateQueries = new Map<number, (view: KeyStateView | undefined) => void>();
  private nextStateQuery = 1;
  private failure: ((err: unknown) => void) | undefined;
  private readonly failed: Promise<never>;
  private readonly positions = new Map<string, JsonValue>();
  private finalMetrics: Record<string, NodeMetrics> | undefined;
  private nextCheckpointAt = 0;
  private readonly startedAt = performance.now();
  private readonly subtaskEntry: Promise<URL>;
  /** Live operations: records and hottest keys per keyed operator and subtask, counted at the exchange. */
  readonly skew: KeySkew;
  /** Live operations: the newest aborted checkpoints with their reason (at most 50). */
  readonly failedCheckpoints: FailedCheckpoint[] = [];

  constructor(private readonly ctx: ParallelContext) {
    this.plan = ctx.plan;
    this.n = ctx.plan.parallelism;
    this.bufferRecords = ctx.exchange?.bufferRecords ?? 1024;
    this.buffersPerChannel = ctx.exchange?.buffersPerChannel ?? 8;
    this.codecName = ctx.exchange?.codec ?? "clone";
    this.wire = codec(this.codecName);
    this.skew = new KeySkew(this.n);
    this.localBuffer = new OutputBuffer(this.bufferRecords);
    this.sinkGate = new InputGate<Payload>(this.n + 1);
    this.failed = new Promise<never>((_, reject) => (this.failure = reject));
    this.failed.catch(() => {});
    this.subtaskEntry = workerBundle(SUBTASK_MODULE).catch((err: unknown) => {
      ctx.log.warn(`keyed subtasks start from source (slower): their bundle could not be built: ${errorMessage(err)}`);
      return SUBTASK_FROM_SOURCE;
    });
  }

  /** Fails the run from outside its tasks (a checkpoint's second half that failed beside them). */
  fail(err: unknown): void {
    this.failure?.(err);
  }

  // ---- set-up ---------------------------------------------------------------------------------

  private restoreParts(): { head: SnapshotPart[]; keyed: (range: KeyGroupRange) => SnapshotPart[] } | undefined {
    const r = this.ctx.restored;
    if (!r) return undefined;
    const maxP = r.meta.maxParallelism;
    if (maxP !== undefined && maxP !== this.plan.maxParallelism) {
      throw new Error(`checkpoint ${r.meta.id} was taken with maxParallelism ${maxP}, the pipeline now says ${this.plan.maxParallelism}; key groups cannot be remapped (restore with the old maxParallelism)`);
    }
    if (!r.tasks) {
      const state = r.state;
      if (!state) throw new Error(`checkpoint ${r.meta.id} holds no state`);
      return { head: [{ bytes: state, primary: true }], keyed: (range) => [{ bytes: state, primary: range.start === 0 }] };
    }
    const tasks = r.tasks;
    return {
      head: tasks.filter((t) => t.task === "source").map((t) => ({ bytes: t.state, primary: true })),
      keyed: (range) =>
        tasks
          .filter((t) => t.task === "keyed" && t.keyGroups !== undefined && t.keyGroups[0] <= range.end && t.keyGroups[1] >= range.start)
          .map((t) => ({ bytes: t.state, primary: t.keyGroups![0] >= range.start && t.keyGroups![0] <= range.end })),
    };
  }

  /** Keyed subtask `i`'s disk store: its own folder, the checkpoint's chains to replay. */
  private diskInit(i: number): SubtaskInit["disk"] {
    const d = this.ctx.disk!;
    const r = this.ctx.restored;
    return {
      dir: `${d.stateDir}/keyed-${i}`,
      sharedDir: d.sharedDir,
      suffix: d.suffix,
      restored: r?.dir !== undefined ? { meta: r.meta, dir: r.dir } : undefined,
      maxParallelism: this.plan.maxParallelism,
    };
  }

  private startWorkers(parts: ReturnType<ParallelExecution["restoreParts"]>, entry: URL): void {
    const { doc, clock } = this.ctx;
    for (let i = 0; i < this.n; i++) {
      const toWorker = new MessageChannel();
      const fromWorker = new MessageChannel();
      const range = this.plan.ranges[i]!;
      const init: SubtaskInit = {
        doc,
        subtask: i,
        parallelism: this.n,
        keyGroupRange: range,
        headNodes: [...this.plan.headNodes],
        routes: this.plan.routes.map((r) => ({ to: r.to, port: r.port, channel: r.channel })),
        sinkNodes: [...this.plan.sinkNodes],
        restore: parts?.keyed(range),
        ...(this.ctx.disk ? { disk: this.diskInit(i) } : {}),
        processingTime: clock.now(),
        bufferRecords: this.bufferRecords,
        buffersPerChannel: this.buffersPerChannel,
        codec: this.codecName,
        input: toWorker.port2,
        output: fromWorker.port2,
        metricsIntervalMs: 1000,
        checkpointIntervalMs: this.ctx.checkpointIntervalMs,
        verifySnapshots: keptColumnsVerification(),
      };
      const w = new Worker(entry, { workerData: init, transferList: [toWorker.port2, fromWorker.port2] });
      this.workers.push(w);
      this.reports.push(undefined);
      const sender = new CreditSender<Payload>((item) => postItem(toWorker.port1, item), this.buffersPerChannel);
      toWorker.port1.on("message", (m: { c: number }) => sender.grant(m.c));
      this.toWorkers.push(sender);
      this.outBuffers.push(new OutputBuffer(this.bufferRecords));
      fromWorker.port1.on("message", (m: WireMessage) => {
        this.sinkGate.push(i, toItem(m));
        this.wakeSinkTask();
      });
      this.sinkPorts.push(fromWorker.port1);
      let finish!: () => void;
      this.workerFinished.push(new Promise<void>((resolve) => (finish = resolve)));
      w.on("message", (m: FromSubtask) => this.onWorkerMessage(i, m, finish));
      w.on("error", (err) => this.failure?.(new Error(`keyed subtask ${i} failed: ${errorMessage(err)}`)));
      w.on("exit", (code) => {
        if (code !== 0) this.failure?.(new Error(`keyed subtask ${i} exited with code ${code}`));
      });
    }
    this.localSender = new CreditSender<Payload>((item) => {
      this.sinkGate.push(this.n, item);
      this.wakeSinkTask();
    }, this.buffersPerChannel);
  }

  private onWorkerMessage(i: number, m: FromSubtask, finish: () => void): void {
    switch (m.type) {
      case "ready":
        this.ctx.log.debug(`keyed subtask ${i} ready after ${Math.round(performance.now() - this.startedAt)} ms`);
        return;
      case "metrics":
        this.reports[i] = m.report;
        try {
          checkJobStateBudget(stateBytesByNode(this.reports), this.ctx.doc.settings);
        } catch (err) {
          this.failure?.(err);
        }
        return;
      case "state": {
        const q = this.stateQueries.get(m.id);
        this.stateQueries.delete(m.id);
        q?.(m.view ?? undefined);
        return;
      }
      case "finished":
        this.reports[i] = m.report;
        finish();
        return;
      case "error":
        this.failure?.(new Error(m.message));
        return;
      case "changes":
        this.ctx.changesAhead?.(i, m.after, m.state);
        return;
      case "ack": {
        const p = this.pending;
        if (!p || p.id !== m.id) return; // an aborted checkpoint
        p.acks.set(i, { state: m.state, alignmentMs: m.alignmentMs, disk: m.disk });
        this.ctx.stage?.(p.id, { task: "keyed", subtask: i }, m.state);
        if (p.acks.size === this.n) p.allAcked();
        return;
      }
    }
  }

  // ---- run ----------------------------------------------------------------------------------

  /** Runs to the end of every source (true) or until stopped (false), then takes a final checkpoint. */
  async run(): Promise<boolean> {
    const { doc, clock } = this.ctx;
    const parts = this.restoreParts();
    const exchange = this.exchangeOutput();
    const remote = { nodes: this.plan.keyedNodes, output: exchange };
    const opts = { processingTime: clock.now(), remote };
    this.headJob = parts ? LocalJob.restore(doc, mergeJobSnapshots(parts.head), opts) : LocalJob.create(doc, opts);
    if (this.ctx.restored) for (const [id, pos] of Object.entries(this.ctx.restored.meta.sources)) this.positions.set(id, pos);
    this.startWorkers(parts, await this.subtaskEntry);
    const sinkDone = this.sinkTask();
    // A sink task that fails (a checkpoint's commit that failed) fails the run now: the source task
    // would otherwise go on without checkpoints until its input ends.
    sinkDone.catch((err: unknown) => this.failure?.(err));
    try {
      const ended = await Promise.race([this.sourceTask(), this.failed]);
      await Promise.race([Promise.all([sinkDone, ...this.workerFinished]), this.failed]);
      return ended;
    } finally {
      this.closeAll();
    }
  }

  private exchangeOutput(): ExchangeOutput {
    const { plan } = this;
    const routeIndex = new Map<string, number>();
    const wmIndex = new Map<string, number>();
    plan.routes.forEach((r, i) => {
      routeIndex.set(`${r.to}\u0000${r.port}\u0000${r.channel}`, i);
      if (!wmIndex.has(`${r.to}\u0000${r.channel}`)) wmIndex.set(`${r.to}\u0000${r.channel}`, i);
    });
    const selectors: Array<KeySelector | undefined> = routeKeySelectors(this.ctx.doc, plan);
    const skew = this.skew;
    const maxP = plan.maxParallelism;
    const owner = new Int32Array(maxP);
    for (let g = 0; g < maxP; g++) owner[g] = computeOperatorIndexForKeyGroup(maxP, this.n, g);
    const bufs = this.outBuffers;
    // The last route looked up, since a source's records all take the same one.
    let lastTo = "";
    let lastPort = "";
    let lastChannel = -1;
    let lastRoute = -1;
    return {
      record: (to: string, port: string, channel: number, value: JsonObject, timestamp: number) => {
        if (to !== lastTo || port !== lastPort || channel !== lastChannel) {
          const r = routeIndex.get(`${to}\u0000${port}\u0000${channel}`);
          if (r === undefined) throw new Error(`no exchange route to node "${to}" port "${port}"`);
          lastTo = to;
          lastPort = port;
          lastChannel = channel;
          lastRoute = r;
        }
        const route = lastRoute;
        const mode = plan.routes[route]!.mode;
        if (mode === "hash") {
          let target = 0;
          try {
            const key = selectors[route]!(value);
            target = owner[keyGroupOf(key, maxP)]!;
            skew.offer(to, target, key);
          } catch {
            // No key: the subtask's keyed node sends it to `errors` (any subtask would).
          }
          bufs[target]!.record(REC, route, value, timestamp);
        } else if (mode === "first") bufs[0]!.record(REC, route, value, timestamp);
        else for (const b of bufs) b.record(REC, route, value, timestamp);
      },
      watermark: (to: string, channel: number, watermark: number) => {
        const route = wmIndex.get(`${to}\u0000${channel}`);
        if (route === undefined) throw new Error(`no exchange route to node "${to}" channel ${channel}`);
        for (const b of bufs) b.watermark(route, watermark);
      },
      idle: (to: string, channel: number, idle: boolean) => {
        const route = wmIndex.get(`${to}\u0000${channel}`);
        if (route === undefined) throw new Error(`no exchange route to node "${to}" channel ${channel}`);
        for (const b of bufs) b.control(IDLE, route, idle ? 1 : 0);
      },
    };
  }

  // ---- source task ---------------------------------------------------------------------------

  private async sourceTask(): Promise<boolean> {
    const { clock, doc } = this.ctx;
    const queue = new BatchQueue<Item>();
    const onAbort = () => queue.close();
    this.ctx.signal.addEventListener("abort", onAbort, { once: true });
    let active = this.ctx.sources.length;
    startSources(doc, this.ctx.sources, this.ctx.signal, (source) =>
      source.run((batch) => queue.put({ kind: "batch", source, batch }), this.ctx.signal).then(
        () => queue.put({ kind: "end", source }),
        (error: unknown) => queue.put({ kind: "error", source, error }),
      ),
    );
    const interval = this.ctx.checkpointIntervalMs;
    const tick = this.ctx.tickMs;
    const activity = new Map<string, PartitionActivity>();
    for (const s of this.ctx.sources) if (s.idleTimeoutMs !== undefined) activity.set(s.nodeId, { lastRecordAt: new Map(), idle: new Set() });
    this.nextCheckpointAt = clock.now() + interval;
    let lastTick = 0;
    let ended = true;
    const job = this.headJob;
    try {
      while (active > 0) {
        if (this.ctx.stopRequested()) {
          ended = false;
          break;
        }
        // Aborted without a stop: the job failed (and closed the queue, whose take() then returns at
        // once: this loop would spin on resolved promises and starve the event loop for ever).
        if (this.ctx.signal.aborted) throw this.ctx.signal.reason instanceof Error ? this.ctx.signal.reason : new Error("the job was aborted");
        if (this.pending === undefined && clock.now() >= this.nextCheckpointAt) await this.injectBarrier(doc.settings.checkpointTimeoutMs);
        const wait = Math.min(tick, Math.max(0, this.nextCheckpointAt - clock.now()));
        this.sourceTime.switchTo("idle");
        const taken = await queue.take(wait);
        this.sourceTime.switchTo("busy");
        if (this.ctx.stopRequested()) {
          taken?.done();
          ended = false;
          break;
        }
        if (taken) {
          const { item } = taken;
          if (item.kind === "error") throw item.error;
          if (item.kind === "end") {
            job.endOfInput(item.source.nodeId);
            active--;
          } else this.push(item.source, item.batch, activity.get(item.source.nodeId));
        }
        const now = clock.now();
        job.advanceProcessingTime(now);
        for (const source of this.ctx.sources) {
          const act = activity.get(source.nodeId);
          if (!act || source.idleTimeoutMs === undefined) continue;
          for (const [partition, at] of act.lastRecordAt) {
            if (!act.idle.has(partition) && now - at >= source.idleTimeoutMs) {
              act.idle.add(partition);
              job.markPartitionIdle(source.nodeId, partition);
            }
          }
        }
        await this.flushSourceTask();
        taken?.done();
        if (now - lastTick >= tick) {
          lastTick = now;
          for (const w of this.workers) w.postMessage({ type: "time", now } satisfies ToSubtask);
        }
      }
      if (ended) {
        job.advanceProcessingTime(clock.now());
        await this.flushSourceTask();
      }
      // The final checkpoint: after the one in progress, a barrier behind all output, then the end.
      await this.pending?.done;
      await this.injectBarrier(undefined);
      const final = this.pending as PendingCheckpoint | undefined;
      for (const s of this.toWorkers) s.event({ kind: "end" });
      this.localSender.event({ kind: "end" });
      await final?.done;
      return ended;
    } finally {
      this.sourceTime.switchTo("idle");
      this.ctx.signal.removeEventListener("abort", onAbort);
      queue.close();
    }
  }

  private push(source: RecordSource, batch: SourceBatch, act: PartitionActivity | undefined): void {
    pushSourceBatch(this.headJob, source.nodeId, batch, act, act ? this.ctx.clock.now() : 0);
    this.positions.set(source.nodeId, batch.position);
  }

  /** Sends what the source task produced: to the subtasks by key group, to the sink task directly. */
  private async flushSourceTask(): Promise<void> {
    for (const e of this.headJob.drain()) {
      if (e.kind === "sink") this.localBuffer.record(SINK, this.plan.sinkNodes.indexOf(e.nodeId), e.value, e.timestamp, e.key ?? null);
      else this.localBuffer.record(DEAD, e);
    }
    // Channels fill concurrently (a subtask out of credit does not hold the others back); the task
    // counts as backpressured while any channel waits for credit.
    let waiting = 0;
    const onWait = (w: boolean) => {
      waiting += w ? 1 : -1;
      this.sourceTime.switchTo(waiting > 0 ? "backPressured" : "busy");
    };
    const wire = this.wire;
    const sends: Array<Promise<void>> = [];
    for (let i = 0; i < this.n; i++) {
      const buffers = this.outBuffers[i]!.take();
      if (buffers.length === 0) continue;
      const sender = this.toWorkers[i]!;
      sends.push(
        (async () => {
          for (const b of buffers) await sender.send(wire.encode(b.elements), b.records, onWait);
        })(),
      );
    }
    const local = this.localBuffer.take();
    if (local.length > 0) {
      sends.push(
        (async () => {
          for (const b of local) await this.localSender.send(b.elements, b.records, onWait);
        })(),
      );
    }
    await Promise.all(sends);
  }

  /** Each partition's watermark at a source node: the source task's LocalJob parses the sources. */
  sourcePartitionWatermarks(nodeId: string): Array<{ partition: number; watermark: number | null; idle: boolean }> {
    return this.headJob ? this.headJob.sourcePartitionWatermarks(nodeId) : [];
  }

  /**
   * Queryable state: `key`'s state and timers at `nodeId`, from the subtask that owns the key's key
   * group (keyed nodes) or the source task (chained head nodes); undefined for other nodes.
   */
  async queryState(nodeId: string, key: string): Promise<AnsweredState | undefined> {
    if (this.plan.headNodes.has(nodeId)) {
      const view = this.headJob ? this.headJob.queryState(nodeId, key) : undefined;
      return view && { view, task: "source", index: 0 };
    }
    if (!this.plan.keyedNodes.has(nodeId)) return undefined;
    const maxP = this.plan.maxParallelism;
    const owner = computeOperatorIndexForKeyGroup(maxP, this.n, keyGroupOf(key, maxP));
    const worker = this.workers[owner];
    if (!worker) return undefined;
    const id = this.nextStateQuery++;
    const view = await new Promise<KeyStateView | undefined>((resolve, reject) => {
      this.stateQueries.set(id, resolve);
      this.failed.catch(reject);
      worker.postMessage({ type: "state", id, nodeId, key } satisfies ToSubtask);
    });
    return view && { view, task: "keyed", index: owner };
  }

  /** A checkpoint as soon as none is in progress (a savepoint), whatever the interval says. */
  requestCheckpoint(): void {
    this.nextCheckpointAt = 0;
  }

  /** Snapshots the source task and sends barrier `id` down every channel; `timeoutMs` undefined: the final checkpoint (no timeout). */
  private async injectBarrier(timeoutMs: number | undefined): Promise<void> {
    const { clock } = this.ctx;
    const dueAt = this.nextCheckpointAt;
    await this.flushSourceTask();
    // One checkpoint at a time, its asynchronous part included; the id is taken right after (no await between).
    await this.ctx.settle?.();
    const id = this.ctx.nextCheckpointId();
    const t0 = performance.now();
    const head = this.headJob.snapshot();
    const changelogs = this.toWorkers.map((_, i) => this.ctx.changelogFor?.(i));
    let allAcked!: () => void;
    const acked = new Promise<void>((resolve) => (allAcked = resolve));
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const p: PendingCheckpoint = {
      id,
      dueAt,
      startedAt: clock.now(),
      t0,
      head,
      positions: Object.fromEntries(this.positions),
      final: timeoutMs === undefined,
      changelogs,
      acks: new Map(),
      sinkAligned: false,
      allAcked,
      acked,
      timer: undefined,
      done,
      finish,
    };
    this.pending = p;
    this.ctx.stage?.(id, { task: "source", subtask: 0 }, head);
    if (timeoutMs !== undefined) {
      p.timer = setTimeout(() => this.abortCheckpoint(p, `not acknowledged by every task within checkpointTimeoutMs (${timeoutMs} ms)`), timeoutMs);
      p.timer.unref?.();
    }
    this.toWorkers.forEach((s, i) => {
      const changelog = changelogs[i]?.mode;
      s.event(changelog ? { kind: "barrier", id, options: { changelog } } : { kind: "barrier", id });
    });
    this.localSender.event({ kind: "barrier", id });
  }

  private abortCheckpoint(p: PendingCheckpoint, why: string): void {
    if (this.pending !== p || p.sinkAligned) return;
    this.ctx.log.warn(`checkpoint ${p.id} aborted: ${why}`);
    this.pending = undefined;
    const failed: FailedCheckpoint = { id: p.id, triggeredAt: p.startedAt, failedAt: this.ctx.clock.now(), reason: why };
    this.failedCheckpoints.push(failed);
    if (this.failedCheckpoints.length > 50) this.failedCheckpoints.shift();
    this.ctx.aborted?.(failed);
    for (const w of this.workers) w.postMessage({ type: "abort", id: p.id } satisfies ToSubtask);
    this.sinkGate.abort(p.id);
    this.wakeSinkTask();
    this.nextCheckpointAt = this.ctx.clock.now() + this.ctx.doc.settings.minPauseBetweenCheckpointsMs;
    p.finish();
  }

  /** The sink task aligned barrier `id`: everything before it is written; commit once every subtask acknowledged. */
  private async onSinkAligned(id: number, alignmentMs: number): Promise<void> {
    const p = this.pending;
    if (!p || p.id !== id) return;
    p.sinkAligned = true;
    if (p.timer) clearTimeout(p.timer);
    await Promise.race([p.acked, this.failed]);
    const tasks: TaskCheckpointState[] = [{ task: "source", subtask: 0, state: p.head, alignmentMs: 0 }];
    for (let i = 0; i < this.n; i++) {
      const a = p.acks.get(i)!;
      const r = this.plan.ranges[i]!;
      tasks.push({ task: "keyed", subtask: i, keyGroups: [r.start, r.end], state: a.state, alignmentMs: Math.round(a.alignmentMs * 10) / 10, ...(a.disk ? { disk: a.disk } : {}) });
    }
    tasks.push({ task: "sink", subtask: 0, alignmentMs: Math.round(alignmentMs * 10) / 10 });
    await this.ctx.complete({ id, startedAt: p.startedAt, t0: p.t0, tasks, positions: p.positions, final: p.final, changelogs: p.changelogs });
    this.pending = undefined;
    const { clock, doc } = this.ctx;
    this.nextCheckpointAt = nextCheckpointDue(p.dueAt, p.startedAt, this.ctx.checkpointIntervalMs, clock.now() + doc.settings.minPauseBetweenCheckpointsMs);
    p.finish();
  }

  // ---- sink task -----------------------------------------------------------------------------

  private wakeSinkTask(): void {
    const w = this.wakeSink;
    this.wakeSink = undefined;
    w?.();
  }

  private async sinkTask(): Promise<void> {
    const wire = codec(this.codecName);
    const sinks = this.plan.sinkNodes;
    /** Records per sink write: consecutive buffers already queued go out in one write. */
    const maxBatch = Math.max(this.bufferRecords, 4096);
    let deferred: GateNext<Payload> | undefined;
    // Writes run one after the other (a sink's output keeps its order) while the next buffers are
    // decoded: at most `MAX_WRITES` batches wait for the sinks, so memory stays bounded.
    const MAX_WRITES = 2;
    let writing: Promise<void> = Promise.resolve();
    let writes = 0;
    for (;;) {
      const next = deferred ?? this.sinkGate.poll();
      deferred = undefined;
      if (next === undefined) {
        this.sinkTime.switchTo("idle");
        await Promise.race([new Promise<void>((resolve) => (this.wakeSink = resolve)), this.failed]);
        continue;
      }
      this.sinkTime.switchTo("busy");
      if (next.kind === "end") {
        await writing;
        break;
      }
      if (next.kind === "aligned") {
        await writing; // everything before the barrier is with the sinks before they prepare
        await this.onSinkAligned(next.id, next.alignmentMs);
        continue;
      }
      const emissions: TaskEmission[] = [];
      const credits: number[] = [];
      let records = 0;
      for (let item: GateNext<Payload> | undefined = next; item !== undefined; ) {
        if (item.kind !== "data") {
          deferred = item;
          break;
        }
        credits.push(item.channel);
        records += item.records;
        const els = item.channel < this.n ? wire.decode(item.payload) : (item.payload as unknown[]);
        for (let i = 0; i < els.length; ) {
          if (els[i] === SINK) {
            const nodeId = sinks[els[i + 1] as number]!;
            const key = els[i + 4] as string | null;
            this.sinkCounts.set(nodeId, (this.sinkCounts.get(nodeId) ?? 0) + 1);
            emissions.push(key === null ? { kind: "sink", nodeId, value: els[i + 2] as JsonObject, timestamp: els[i + 3] as number } : { kind: "sink", nodeId, value: els[i + 2] as JsonObject, timestamp: els[i + 3] as number, key });
            i += 5;
          } else if (els[i] === SINK_JSON) {
            const nodeId = sinks[els[i + 1] as number]!;
            const key = els[i + 4] as string | null;
            this.sinkCounts.set(nodeId, (this.sinkCounts.get(nodeId) ?? 0) + 1);
            emissions.push({ kind: "serializedSink", nodeId, record: new SerializedSinkRecord(els[i + 2] as string, els[i + 3] as number, key ?? undefined) });
            i += 5;
          } else if (els[i] === DEAD) {
            emissions.push(els[i + 1] as JobEmission);
            i += 2;
          } else throw new Error(`sink task: unknown element kind ${String(els[i])}`);
        }
        if (records >= maxBatch) break;
        item = this.sinkGate.poll();
      }
      if (writes >= MAX_WRITES) await writing;
      writes++;
      writing = writing.then(() => this.ctx.write(emissions)).finally(() => writes--);
      writing.catch((err: unknown) => this.failure?.(err));
      for (const c of credits) {
        if (c < this.n) this.sinkPorts[c]!.postMessage({ c: 1 });
        else this.localSender.grant(1);
      }
    }
    this.sinkTime.switchTo("idle");
  }

  // ---- metrics, shutdown ----------------------------------------------------------------------

  /** The checkpoint in flight with each task's acknowledgement; undefined between checkpoints. */
  checkpointProgress(): CheckpointProgress | undefined {
    const p = this.pending;
    if (!p) return undefined;
    const tasks: CheckpointProgress["tasks"] = [{ task: "source", subtask: 0, acknowledged: true }];
    for (let i = 0; i < this.n; i++) {
      const a = p.acks.get(i);
      tasks.push(a ? { task: "keyed", subtask: i, acknowledged: true, alignmentMs: Math.round(a.alignmentMs * 10) / 10 } : { task: "keyed", subtask: i, acknowledged: false });
    }
    tasks.push({ task: "sink", subtask: 0, acknowledged: p.sinkAligned });
    return { id: p.id, triggeredAt: p.startedAt, tasks };
  }

  /** Per-node figures over all tasks: counters summed over subtasks, the watermark their minimum. */
  metrics(): Record<string, NodeMetrics> {
    if (this.finalMetrics) return this.finalMetrics;
    const head = this.headJob?.metrics() ?? {};
    const out: Record<string, NodeMetrics> = {};
    for (const id of this.plan.headNodes) if (head[id]) out[id] = head[id];
    const zero = (): NodeMetrics => ({ recordsIn: 0, recordsOut: 0, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: MIN_WATERMARK });
    for (const id of this.plan.keyedNodes) {
      const m = zero();
      let wm: number | undefined;
      for (const r of this.reports) {
        const x = r?.nodes[id];
        if (!x) continue;
        m.recordsIn += x.recordsIn;
        m.recordsOut += x.recordsOut;
        m.late += x.late;
        m.deadLetters += x.deadLetters;
        m.keys += x.keys;
        m.timers += x.timers;
        m.stateBytes += x.stateBytes;
        wm = wm === undefined ? x.watermark : Math.min(wm, x.watermark);
      }
      m.watermark = wm ?? MIN_WATERMARK;
      out[id] = m;
    }
    for (const id of this.plan.sinkNodes) {
      const m = zero();
      m.recordsIn = (head[id]?.recordsIn ?? 0) + this.reports.reduce((s, r) => s + (r?.nodes[id]?.recordsIn ?? 0), 0);
      out[id] = m;
    }
    return out;
  }

  subtaskMetrics(): SubtaskMetrics[] {
    const bound = this.bufferRecords * this.buffersPerChannel;
    const head = this.headJob?.metrics() ?? {};
    const pick = (ids: Iterable<string>, from: Record<string, NodeMetrics>) => {
      const o: Record<string, NodeMetrics> = {};
      for (const id of ids) if (from[id]) o[id] = from[id];
      return o;
    };
    const senders = [...this.toWorkers, ...(this.localSender ? [this.localSender] : [])];
    const out: SubtaskMetrics[] = [
      {
        task: "source",
        subtask: 0,
        nodes: [...this.plan.headNodes],
        metrics: pick(this.plan.headNodes, head),
        ...this.sourceTime.perSecond(),
        totals: this.sourceTime.cumulative(),
        queuedRecords: senders.reduce((s, x) => s + x.inFlightRecords, 0),
        maxQueuedRecords: Math.max(0, ...senders.map((x) => x.maxInFlightRecords)),
        queueBoundRecords: bound,
      },
    ];
    this.reports.forEach((r, i) => {
      out.push({
        task: "keyed",
        subtask: i,
        nodes: [...this.plan.keyedNodes],
        keyGroupRange: this.plan.ranges[i]!,
        metrics: r ? pick(this.plan.keyedNodes, r.nodes) : {},
        ...(r?.times ?? { busyTimeMsPerSecond: 0, backPressuredTimeMsPerSecond: 0, idleTimeMsPerSecond: 0 }),
        totals: r?.totals ?? { busy: 0, backPressured: 0, idle: 0 },
        queuedRecords: r?.queuedRecords ?? 0,
        maxQueuedRecords: r?.maxQueuedRecords ?? 0,
        queueBoundRecords: bound,
      });
    });
    const sinkMetrics: Record<string, NodeMetrics> = {};
    for (const id of this.plan.sinkNodes) sinkMetrics[id] = { recordsIn: this.sinkCounts.get(id) ?? 0, recordsOut: 0, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: MIN_WATERMARK };
    out.push({ task: "sink", subtask: 0, nodes: [...this.plan.sinkNodes], metrics: sinkMetrics, ...this.sinkTime.perSecond(), totals: this.sinkTime.cumulative(), queuedRecords: 0, maxQueuedRecords: 0, queueBoundRecords: bound });
    return out;
  }

  private closeAll(): void {
    this.finalMetrics = this.metrics();
    for (const answer of this.stateQueries.values()) answer(undefined);
    this.stateQueries.clear();
    for (const s of [...this.toWorkers, this.localSender]) s?.close();
    if (this.pending?.timer) clearTimeout(this.pending.timer);
    for (const p of this.sinkPorts) p.close();
    for (const w of this.workers) {
      w.removeAllListeners("exit");
      void w.terminate();
    }
    this.wakeSinkTask();
  }
}
