// The live-operations side of one managed job, kept across its restarts: sink throttles, and where
// each sink's time goes (busy while a write is pending, idle otherwise), measured by wrapping the
// sinks the connectors build. The driver and the parallel runtime stay unaware of it.
import type { Connectors, JobIoNode } from "../job/driver";
import { TimeAccount, type TaskTimes } from "../exec/channel";
import type { RecordSink, SinkRecord } from "../io/types";
import { RecordThrottle, type ThrottleClock } from "./throttle";
import type { JsonValue } from "@keyflow/operators";

/** A sink with its throttle applied and its time accounted. */
export class OpsSink implements RecordSink {
  readonly nodeId: string;
  private pending = 0;

  constructor(
    private readonly inner: RecordSink,
    private readonly throttle: RecordThrottle,
    readonly time: TimeAccount,
  ) {
    this.nodeId = inner.nodeId;
  }

  get target(): string {
    return this.inner.target;
  }

  open(restored: JsonValue | undefined): Promise<void> {
    return this.inner.open(restored);
  }

  async write(records: readonly SinkRecord[]): Promise<void> {
    if (this.pending++ === 0) this.time.switchTo("busy");
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

export class JobOps {
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
    const wrapped = new OpsSink(sink, this.throttleOf(sink.nodeId), new TimeAccount());
    this.sinks.set(sink.nodeId, wrapped);
    return wrapped;
  }

  /** The connectors with every sink wrapped. */
  wrapConnectors(c: Connectors): Connectors {
    return {
      source: (node: JobIoNode) => c.source(node),
      sink: (node: JobIoNode) => this.wrapSink(c.sink(node)),
      deadLetters: () => c.deadLetters(),
      close: () => c.close(),
    };
  }

  /** Busy / idle ms per second of each sink of the current run (a sink is never backpressured: nothing is below it). */
  sinkTimes(): Record<string, TaskTimes> {
    const out: Record<string, TaskTimes> = {};
    for (const [id, s] of this.sinks) out[id] = s.time.perSecond();
    return out;
  }
}
