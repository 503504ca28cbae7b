// Watermark generation at a source: Flink's BoundedOutOfOrdernessWatermarks per source partition,
// combined over partitions with idleness (WatermarkStatus). Pure: the runner and LocalJob feed it
// event times and the injected processing time.
import { MAX_WATERMARK, MIN_WATERMARK } from "./api";

interface PartitionState {
  /** Largest event time seen on the partition. */
  max: number;
  idle: boolean;
  /** Injected processing time of its last record, for idleTimeoutMs. */
  lastSeen: number;
}

/** [partition, max event time, idle, last seen] */
export type PartitionWatermarkTuple = [number, number, boolean, number];

/**
 * Per partition: `max event time seen − maxOutOfOrdernessMs − 1`, updated after every record;
 * the source's watermark is the minimum over its non-idle partitions, and never goes back.
 */
export class PartitionWatermarks {
  private readonly partitions = new Map<number, PartitionState>();
  /** The watermark last emitted. */
  private emitted = MIN_WATERMARK;
  private ended = false;

  constructor(readonly maxOutOfOrdernessMs: number) {}

  get watermark(): number {
    return this.emitted;
  }

  /** Every known partition is idle (and there is at least one). */
  get idle(): boolean {
    if (this.ended || this.partitions.size === 0) return false;
    for (const p of this.partitions.values()) if (!p.idle) return false;
    return true;
  }

  /** Notes a record's event time; returns the new watermark when it advanced, else undefined. */
  onRecord(partition: number, timestamp: number, processingTime: number): number | undefined {
    let p = this.partitions.get(partition);
    if (p === undefined) {
      p = { max: MIN_WATERMARK, idle: false, lastSeen: processingTime };
      this.partitions.set(partition, p);
    } else {
      p.idle = false;
      p.lastSeen = processingTime;
    }
    if (timestamp > p.max) p.max = timestamp;
    return this.advance();
  }

  /** Marks a partition idle (it no longer holds the watermark back); returns the new watermark if it advanced. */
  markIdle(partition: number, processingTime: number): number | undefined {
    const p = this.partitions.get(partition);
    if (p === undefined) this.partitions.set(partition, { max: MIN_WATERMARK, idle: true, lastSeen: processingTime });
    else p.idle = true;
    return this.advance();
  }

  /** The partitions silent for at least `timeoutMs` at `now`, ascending, that are not idle yet. */
  silentPartitions(now: number, timeoutMs: number): number[] {
    const out: number[] = [];
    for (const [id, p] of this.partitions) if (!p.idle && now - p.lastSeen >= timeoutMs) out.push(id);
    return out.sort((a, b) => a - b);
  }

  /**
   * Each partition's own watermark (max event time − maxOutOfOrdernessMs − 1; null before its first
   * record) and whether it is idle, ascending: what the canvas's Sources panel shows per partition.
   */
  partitionWatermarks(): Array<{ partition: number; watermark: number | null; idle: boolean }> {
    return [...this.partitions.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([partition, p]) => ({ partition, watermark: p.max === MIN_WATERMARK ? null : p.max - this.maxOutOfOrdernessMs - 1, idle: p.idle }));
  }

  /** The input is exhausted: the watermark becomes +infinity. */
  end(): void {
    this.ended = true;
    this.emitted = MAX_WATERMARK;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  private advance(): number | undefined {
    if (this.ended) return undefined;
    let min: number | undefined;
    for (const p of this.partitions.values()) {
      if (p.idle) continue;
      const w = p.max - this.maxOutOfOrdernessMs - 1;
      if (min === undefined || w < min) min = w;
    }
    if (min === undefined || min <= this.emitted) return undefined;
    this.emitted = min;
    return min;
  }

  snapshot(): { partitions: PartitionWatermarkTuple[]; emitted: number; ended: boolean } {
    const partitions = [...this.partitions.entries()].sort((a, b) => a[0] - b[0]).map(([id, p]): PartitionWatermarkTuple => [id, p.max, p.idle, p.lastSeen]);
    return { partitions, emitted: this.emitted, ended: this.ended };
  }

  restore(s: { partitions: PartitionWatermarkTuple[]; emitted: number; ended: boolean }): void {
    this.partitions.clear();
    for (const [id, max, idle, lastSeen] of s.partitions) this.partitions.set(id, { max, idle, lastSeen });
    this.emitted = s.emitted;
    this.ended = s.ended;
  }
}
