// Per-partition figures of a source, seen on the batches it hands the job (a wrapper around the
// source, so the connectors stay unaware): records, last offset, when the last record came, idle
// partitions (the source's idleTimeoutMs without a record, or a partition the source declared
// idle), and for sources that deliver parsed values (the demo) the partition's watermark by the
// engine's formula (highest event time − maxOutOfOrdernessMs − 1). Kafka consumer lag comes from
// the source itself (inputMetrics).
import type { JsonValue } from "@keyflow/operators";
import type { EmitBatch, RecordSource, SourceInputMetrics } from "../io/types";

export interface PartitionFigures {
  partition: number;
  records: number;
  lastOffset: string | null;
  /** Processing time (epoch ms) of the partition's last record; null before the first. */
  lastRecordAt: number | null;
  idle: boolean;
  /** Records behind the end of the partition (Kafka consumer lag), when the source reports it. */
  lag: number | null;
  /** Epoch ms, for sources of parsed values; null when unknown (raw bytes are parsed by the engine). */
  watermark: number | null;
}

export interface SourceFigures {
  input: string | null;
  partitions: PartitionFigures[];
}

interface Partition {
  records: number;
  lastOffset: string | null;
  lastRecordAt: number | null;
  declaredIdle: boolean;
  maxEventTime: number | null;
}

export class WatchedSource implements RecordSource {
  readonly nodeId: string;
  private readonly partitions = new Map<number, Partition>();

  constructor(
    private readonly inner: RecordSource,
    private readonly watch: { timestampField: string | undefined; maxOutOfOrdernessMs: number; now: () => number },
  ) {
    this.nodeId = inner.nodeId;
    // Only sources that report input figures (Kafka consumer lag) do through the wrapper.
    const metrics = inner.inputMetrics?.bind(inner);
    if (metrics) this.inputMetrics = metrics;
  }

  inputMetrics?: () => SourceInputMetrics;

  get bounded(): boolean {
    return this.inner.bounded;
  }
  get idleTimeoutMs(): number | undefined {
    return this.inner.idleTimeoutMs;
  }

  open(restored: JsonValue | undefined): Promise<JsonValue> {
    return this.inner.open(restored);
  }

  run(emit: EmitBatch, signal: AbortSignal): Promise<void> {
    return this.inner.run((batch) => {
      const now = this.watch.now();
      const field = this.watch.timestampField;
      for (const r of batch.records) {
        const p = this.partition(r.origin.partition);
        p.records++;
        p.lastOffset = r.origin.offset ?? (r.origin.line !== undefined ? String(r.origin.line) : p.lastOffset);
        p.lastRecordAt = now;
        p.declaredIdle = false;
        if (r.kind === "value" && field !== undefined && r.value !== null && typeof r.value === "object" && !Array.isArray(r.value)) {
          const ts = r.value[field];
          if (typeof ts === "number" && Number.isFinite(ts) && (p.maxEventTime === null || ts > p.maxEventTime)) p.maxEventTime = ts;
        }
      }
      for (const idle of batch.idlePartitions ?? []) this.partition(idle).declaredIdle = true;
      return emit(batch);
    }, signal);
  }

  private partition(n: number): Partition {
    let p = this.partitions.get(n);
    if (!p) this.partitions.set(n, (p = { records: 0, lastOffset: null, lastRecordAt: null, declaredIdle: false, maxEventTime: null }));
    return p;
  }

  checkpointCompleted(position: JsonValue): Promise<void> {
    return this.inner.checkpointCompleted?.(position) ?? Promise.resolve();
  }


  close(): Promise<void> {
    return this.inner.close();
  }

  figures(): SourceFigures {
    const m = this.inner.inputMetrics?.();
    const lag = m?.lag ?? {};
    const ids = new Set<number>([...this.partitions.keys(), ...Object.keys(lag).map(Number)]);
    const now = this.watch.now();
    const timeout = this.inner.idleTimeoutMs;
    const partitions = [...ids]
      .sort((a, b) => a - b)
      .map((id): PartitionFigures => {
        const p = this.partitions.get(id);
        const silent = timeout !== undefined && (p?.lastRecordAt === null || p?.lastRecordAt === undefined || now - p.lastRecordAt >= timeout);
        return {
          partition: id,
          records: p?.records ?? 0,
          lastOffset: p?.lastOffset ?? null,
          lastRecordAt: p?.lastRecordAt ?? null,
          idle: (p?.declaredIdle ?? false) || silent,
          lag: lag[String(id)] ?? null,
          watermark: p?.maxEventTime != null ? p.maxEventTime - this.watch.maxOutOfOrdernessMs - 1 : null,
        };
      });
    return { input: m?.input ?? null, partitions };
  }
}
