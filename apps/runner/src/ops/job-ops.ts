// The live-operations side of one managed job, kept across its restarts: sink throttles, where each
// sink's time goes (busy while a write is pending, idle otherwise), taps (the last records into each
// sink, the last dead letters of each node with their reason) and per-partition source figures,
// all measured by wrapping the sources and sinks the connectors build. The driver and the parallel
// runtime stay unaware of it.
import type { Connectors, JobIoNode } from "../job/driver";
import { TimeAccount, type TaskTimes } from "../exec/channel";
import type { CommittingWriter, DeadLetter, DeadLetterSink, RecordSink, SinkRecord } from "../io/types";
import { DEFAULT_MAX_OUT_OF_ORDERNESS_MS } from "@keyflow/operators";
import { RingBuffer } from "./ring-buffer";
import { WatchedSource, type SourceFigures } from "./source-partitions";
import { RecordThrottle, type ThrottleClock } from "./throttle";
import type { JsonValue } from "@keyflow/operators";

/** A writer that hands everything to another one; subclasses look at what is written. */
class DelegatingWriter<T> implements CommittingWriter<T> {
  constructor(protected readonly inner: CommittingWriter<T>) {}
  get target(): string {
    return this.inner.target;
  }
  open(restored: JsonValue | undefined, restoredCommitted?: boolean): Promise<void> {
    // restoredCommitted must reach the writer: without it a Kafka writer takes the restored
    // checkpoint as committed and aborts the transaction it should finish.
    return this.inner.open(restored, restoredCommitted);
  }
  get writesBeforeCommit(): boolean {
    return this.inner.writesBeforeCommit === true;
  }
  write(records: readonly T[]): Promise<void> {
    return this.inner.write(records);
  }
  prepareCommit(checkpointId: number): Promise<JsonValue> {
    return this.inner.prepareCommit(checkpointId);
  }
  commit(checkpointId: number, prepared: JsonValue): Promise<void> {
    return this.inner.commit(checkpointId, prepared);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Where a sink is in the two-phase commit of a checkpoint. */
export type SinkCommitPhase = "preparing" | "prepared" | "committed";

/** A sink with its throttle applied and its time accounted. */
export class OpsSink extends DelegatingWriter<SinkRecord> implements RecordSink {
  readonly nodeId: string;
  private pending = 0;

  constructor(
    inner: RecordSink,
    private readonly throttle: RecordThrottle,
    readonly time: TimeAccount,
    private readonly tap?: RingBuffer<TapEntry>,
    private readonly onPhase?: (checkpointId: number, nodeId: string, phase: SinkCommitPhase) => void,
  ) {
    super(inner);
    this.nodeId = inner.nodeId;
  }

  override async prepareCommit(checkpointId: number): Promise<JsonValue> {
    this.onPhase?.(checkpointId, this.nodeId, "preparing");
    const prepared = await this.inner.prepareCommit(checkpointId);
    this.onPhase?.(checkpointId, this.nodeId, "prepared");
    return prepared;
  }

  override async commit(checkpointId: number, prepared: JsonValue): Promise<void> {
    await this.inner.commit(checkpointId, prepared);
    this.onPhase?.(checkpointId, this.nodeId, "committed");
  }

  override async write(records: readonly SinkRecord[]): Promise<void> {
    if (this.pending++ === 0) this.time.switchTo("busy");
    if (this.tap) {
      const at = Date.now();
      // The newest records only: a big batch would push most of itself out of the buffer anyway.
      // The record itself: a serialized one is parsed only if the tap is read.
      for (const r of records.slice(-this.tap.capacity)) this.tap.push({ at, record: r });
    }
    try {
      if (this.throttle.recordsPerSecond === null) {
        await this.inner.write(records);
        return;
      }
      // In steps of about a tenth of a second, so a lifted throttle frees the rest at once.
      for (let i = 0; i < records.length; ) {
        const n = Math.min(records.length - i, this.throttle.chunkSize());
        await this.throttle.acquire(n);
        await this.inner.write(records.slice(i, i + n));
        i += n;
      }
    } finally {
      if (--this.pending === 0) this.time.switchTo("idle");
    }
  }

}

/** What a sink's tap keeps: when (processing time) and the record as written. */
interface TapEntry {
  at: number;
  record: SinkRecord;
}

/** A record seen by a tap: when (processing time), its value, event time and key. */
export interface TappedRecord {
  at: number;
  value: JsonValue;
  timestamp: number;
  key?: string;
}

/** A dead letter seen by a tap, with the reason the node gave. */
export interface TappedDeadLetter {
  at: number;
  nodeId: string;
  port: string | null;
  reason: string;
  raw: string | null;
  value: JsonValue | null;
  origin: DeadLetter["origin"] | null;
}

/** Records kept per tap. */
export const TAP_CAPACITY = 20;

/** The dead-letter output with a tap per node. */
class TappedDeadLetters extends DelegatingWriter<DeadLetter> implements DeadLetterSink {
  constructor(
    inner: DeadLetterSink,
    private readonly tapOf: (nodeId: string) => RingBuffer<TappedDeadLetter>,
  ) {
    super(inner);
  }
  override write(records: readonly DeadLetter[]): Promise<void> {
    const at = Date.now();
    for (const d of records) {
      this.tapOf(d.nodeId).push({ at, nodeId: d.nodeId, port: d.port ?? null, reason: d.reason, raw: d.raw ?? null, value: d.value ?? null, origin: d.origin ?? null });
    }
    return this.inner.write(records);
  }
}

export class JobOps {
  private readonly sinkTaps = new Map<string, RingBuffer<TapEntry>>();
  private readonly deadLetterTaps = new Map<string, RingBuffer<TappedDeadLetter>>();
  /** The current run's sources, watched. */
  private readonly sources = new Map<string, WatchedSource>();
  /** The checkpoint whose two-phase commit the sinks are in, from the first prepare to the last commit. */
  private commitInFlight: { id: number; since: number; phases: Map<string, SinkCommitPhase> } | undefined;
  private readonly throttles = new Map<string, RecordThrottle>();
  /** The current run's sinks (a restart replaces them). */
  private readonly sinks = new Map<string, OpsSink>();

  constructor(
    /** The job's sink node ids: only these can be throttled. */
    readonly sinkNodes: ReadonlySet<string>,
    private readonly clock?: ThrottleClock,
  ) {}

  private throttleOf(nodeId: string): RecordThrottle {
    let t = this.throttles.get(nodeId);
    if (!t) this.throttles.set(nodeId, (t = new RecordThrottle(this.clock)));
    return t;
  }

  /** Sets (or with null lifts) a sink's cap; throws naming the node when it is not a sink of the job. */
  setThrottle(nodeId: string, recordsPerSecond: number | null): void {
    if (!this.sinkNodes.has(nodeId)) throw new RangeError(`node "${nodeId}" is not a sink of this job (sinks: ${[...this.sinkNodes].join(", ") || "none"})`);
    this.throttleOf(nodeId).set(recordsPerSecond);
  }

  /** The caps in force, by sink node id (null: none). */
  throttleSettings(): Record<string, number | null> {
    const out: Record<string, number | null> = {};
    for (const id of this.sinkNodes) out[id] = this.throttles.get(id)?.recordsPerSecond ?? null;
    return out;
  }

  wrapSink(sink: RecordSink): OpsSink {
    let tap = this.sinkTaps.get(sink.nodeId);
    if (!tap) this.sinkTaps.set(sink.nodeId, (tap = new RingBuffer<TapEntry>(TAP_CAPACITY)));
    const wrapped = new OpsSink(sink, this.throttleOf(sink.nodeId), new TimeAccount(), tap, (id, node, phase) => this.onSinkPhase(id, node, phase));
    this.sinks.set(sink.nodeId, wrapped);
    return wrapped;
  }

  /** The connectors with every sink wrapped. */
  wrapConnectors(c: Connectors): Connectors {
    return {
      source: (node: JobIoNode) => {
        const p = (node.params ?? {}) as { timestampField?: unknown; maxOutOfOrdernessMs?: unknown };
        const watched = new WatchedSource(c.source(node), {
          timestampField: typeof p.timestampField === "string" ? p.timestampField : undefined,
          maxOutOfOrdernessMs: typeof p.maxOutOfOrdernessMs === "number" ? p.maxOutOfOrdernessMs : DEFAULT_MAX_OUT_OF_ORDERNESS_MS,
          now: () => Date.now(),
        });
        this.sources.set(node.nodeId, watched);
        return watched;
      },
      sink: (node: JobIoNode) => this.wrapSink(c.sink(node)),
      deadLetters: () => new TappedDeadLetters(c.deadLetters(), (id) => this.deadLetterTap(id)),
      close: () => c.close(),
    };
  }

  private onSinkPhase(id: number, nodeId: string, phase: SinkCommitPhase): void {
    if (this.commitInFlight?.id !== id) {
      if (phase === "committed") return;
      this.commitInFlight = { id, since: Date.now(), phases: new Map() };
    }
    this.commitInFlight.phases.set(nodeId, phase);
    const sinks = [...this.sinks.keys()];
    if (sinks.every((s) => this.commitInFlight?.phases.get(s) === "committed")) this.commitInFlight = undefined;
  }

  /**
   * The checkpoint the sinks are committing (single-threaded jobs: the snapshot is taken, the sinks
   * prepare, the checkpoint is written, the sinks commit): each sink's phase; undefined between.
   */
  sinkCommitProgress(): { id: number; since: number; sinks: Record<string, SinkCommitPhase | "waiting"> } | undefined {
    const c = this.commitInFlight;
    if (!c) return undefined;
    const sinks: Record<string, SinkCommitPhase | "waiting"> = {};
    for (const id of this.sinks.keys()) sinks[id] = c.phases.get(id) ?? "waiting";
    return { id: c.id, since: c.since, sinks };
  }

  private deadLetterTap(nodeId: string): RingBuffer<TappedDeadLetter> {
    let t = this.deadLetterTaps.get(nodeId);
    if (!t) this.deadLetterTaps.set(nodeId, (t = new RingBuffer<TappedDeadLetter>(TAP_CAPACITY)));
    return t;
  }

  /** What the taps hold for a node: the last records into it (sinks) and its last dead letters, oldest first. */
  taps(nodeId: string): { records: TappedRecord[]; recordsSeen: number; deadLetters: TappedDeadLetter[]; deadLettersSeen: number } {
    const r = this.sinkTaps.get(nodeId);
    const d = this.deadLetterTaps.get(nodeId);
    const records = (r?.toArray() ?? []).map(({ at, record: x }): TappedRecord => ({ at, value: x.value, timestamp: x.timestamp, ...(x.key !== undefined ? { key: x.key } : {}) }));
    return { records, recordsSeen: r?.pushed ?? 0, deadLetters: d?.toArray() ?? [], deadLettersSeen: d?.pushed ?? 0 };
  }

  /**
   * The engine's per-partition watermarks of a source node, set by the job's owner once the driver
   * exists: raw Kafka and file records are parsed only inside the engine, so the wrapper cannot see
   * their event time.
   */
  partitionWatermarks: ((nodeId: string) => Array<{ partition: number; watermark: number | null; idle: boolean }>) | undefined;

  /** Per-partition figures of each source of the current run. */
  sourceFigures(): Record<string, SourceFigures> {
    const out: Record<string, SourceFigures> = {};
    for (const [id, s] of this.sources) {
      const figures = s.figures();
      const engine = new Map((this.partitionWatermarks?.(id) ?? []).map((p) => [p.partition, p]));
      for (const p of figures.partitions) {
        const e = engine.get(p.partition);
        if (e === undefined) continue;
        if (p.watermark === null) p.watermark = e.watermark;
        p.idle ||= e.idle;
      }
      out[id] = figures;
    }
    return out;
  }

  /** Busy / idle ms per second of each sink of the current run (a sink is never backpressured: nothing is below it). */
  sinkTimes(): Record<string, TaskTimes> {
    const out: Record<string, TaskTimes> = {};
    for (const [id, s] of this.sinks) out[id] = s.time.perSecond();
    return out;
  }
}
