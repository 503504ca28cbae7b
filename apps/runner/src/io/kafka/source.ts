// source.kafka: a kafkajs consumer handing whole fetched batches (`eachBatch`) to the job.
//
// Offsets are the runner's, not a consumer group's: the position (next offset per partition, and
// for bounded reads the end offsets fixed at the job's first start) is stored in each checkpoint and
// sought to on restore. kafkajs only consumes through groups, so each start of the job consumes in
// a group of its own (`<group>.<random>`): a restarted runner never waits for the session of the
// one it replaces (30 s after a SIGKILL) before it gets its partitions. The job's stable group
// (`keyflow.<job>.<node>`) has no consuming members; its committed offsets follow completed
// checkpoints (./group-offsets.ts), so lag tools and `startFrom: "committed"` see them. The seek follows consumer.run(), so a first
// fetch may start elsewhere; records below the expected offset are skipped, which makes it harmless.
// A backtest range (startOffsets/startTime, endOffsets/endTime) is resolved to offsets per partition
// at the first start (times through the broker's offsets-for-times lookup) and then lives in the
// checkpoint like any position, so a restored backtest reads exactly the same range.
import { randomBytes } from "node:crypto";
import type { Admin, Consumer, EachBatchPayload, Kafka } from "kafkajs";
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";
import type { Logger } from "../../log";
import type { EmitBatch, RecordSource, SourceBatch, SourceInputMetrics, SourceRecord } from "../types";
import { GroupOffsetCommitter } from "./group-offsets";

const offsetMap = z.record(z.string().regex(/^\d+$/), z.string().regex(/^\d+$/));
const positionSchema = z.object({ topic: z.string(), next: offsetMap, end: offsetMap.optional() });
type KafkaPosition = z.infer<typeof positionSchema>;

export interface KafkaSourceOptions {
  nodeId: string;
  kafka: Kafka;
  admin: () => Promise<Admin>;
  topic: string;
  /** The job's stable consumer group: committed offsets only, no members. */
  groupId: string;
  startFrom: "earliest" | "latest" | "committed";
  bounded: boolean;
  /** A range: first offset per partition, or the first record at or after an instant (epoch ms). */
  startOffsets?: Readonly<Record<string, number>> | undefined;
  startTime?: number | undefined;
  /** Bounded reads: first offset not to read per partition, or the first record at or after an instant. */
  endOffsets?: Readonly<Record<string, number>> | undefined;
  endTime?: number | undefined;
  idleTimeoutMs: number | undefined;
  log: Logger;
}

const EMPTY = new Uint8Array(0);

export class KafkaSource implements RecordSource {
  readonly nodeId: string;
  readonly bounded: boolean;
  readonly idleTimeoutMs: number | undefined;
  /** Next offset to hand to the job, per partition (as processed by the job, see class doc). */
  private readonly next = new Map<number, number>();
  /** Bounded reads: first offset not to read, per partition. */
  private readonly end = new Map<number, number>();
  private readonly done = new Set<number>();
  /** Partition end (high watermark) as last reported by a fetch, for consumer lag. */
  private readonly highWatermark = new Map<number, number>();
  private consumer: Consumer | undefined;
  private readonly committer: GroupOffsetCommitter;
  private readonly log: Logger;

  constructor(private readonly opts: KafkaSourceOptions) {
    this.nodeId = opts.nodeId;
    this.bounded = opts.bounded;
    this.idleTimeoutMs = opts.idleTimeoutMs;
    this.log = opts.log;
    this.committer = new GroupOffsetCommitter(opts.kafka, opts.groupId, opts.topic, opts.log);
  }

  private fail(message: string): Error {
    return new Error(`node "${this.nodeId}" (Kafka topic "${this.opts.topic}"): ${message}`);
  }

  async open(restored: JsonValue | undefined): Promise<JsonValue> {
    const { topic } = this.opts;
    const admin = await this.opts.admin();
    const topics = await admin.listTopics();
    if (!topics.includes(topic)) throw this.fail(`the topic does not exist; create it or fix the "topic" param`);
    const offsets = await admin.fetchTopicOffsets(topic);

    let saved: KafkaPosition | undefined;
    if (restored !== undefined) {
      const parsed = positionSchema.safeParse(restored);
      if (!parsed.success) throw this.fail(`the checkpoint's Kafka position is not understood: ${JSON.stringify(restored)}`);
      saved = parsed.data;
      if (saved.topic !== topic) this.log.warn(`the checkpoint read topic "${saved.topic}"; now reading "${topic}" from its start position`);
    }
    const committed = !saved && this.opts.startFrom === "committed" ? await this.committedOffsets(admin) : new Map<number, number>();
    // Only a first start resolves the range: afterwards the checkpoint has the offsets.
    const first = saved?.topic !== topic;
    const startAt = first && this.opts.startTime !== undefined ? await this.offsetsAt(admin, this.opts.startTime) : undefined;
    const endAt = first && this.bounded && this.opts.endTime !== undefined ? await this.offsetsAt(admin, this.opts.endTime) : undefined;
    const known = new Set(offsets.map((o) => o.partition).sort((a, b) => a - b).map(String));
    for (const [param, named] of [["startOffsets", this.opts.startOffsets], ["endOffsets", this.opts.endOffsets]] as const) {
      const unknown = Object.keys(named ?? {}).filter((p) => !known.has(p));
      if (first && unknown.length > 0) throw this.fail(`${param} names partition ${unknown.join(", ")}, but the topic has partitions ${[...known].join(", ")}`);
    }

    for (const { partition, low, high } of offsets) {
      const lowN = Number(low);
      const highN = Number(high);
      const fromCheckpoint = saved?.topic === topic ? saved.next[String(partition)] : undefined;
      let start: number;
      if (fromCheckpoint !== undefined) start = Math.max(Number(fromCheckpoint), lowN);
      else if (saved?.topic === topic) start = lowN; // a partition added since the checkpoint
      else if (this.opts.startOffsets?.[String(partition)] !== undefined) start = this.clamp("startOffsets", partition, this.opts.startOffsets[String(partition)] ?? lowN, lowN, highN);
      else if (startAt !== undefined) start = startAt.get(partition) ?? highN;
      else if (this.opts.startFrom === "latest") start = highN;
      else if (this.opts.startFrom === "committed") start = committed.get(partition) ?? lowN;
      else start = lowN;
      if (fromCheckpoint !== undefined && Number(fromCheckpoint) < lowN) {
        this.log.warn(`partition ${partition}: offsets ${fromCheckpoint}..${lowN - 1} were deleted by retention before they were read`);
      }
      this.next.set(partition, start);
      this.highWatermark.set(partition, highN);
      if (this.bounded) {
        const savedEnd = saved?.topic === topic ? saved.end?.[String(partition)] : undefined;
        // The end offsets are those seen when the job FIRST started, kept across restores.
        const named = this.opts.endOffsets?.[String(partition)];
        const end =
          savedEnd !== undefined
            ? Number(savedEnd)
            : saved?.topic === topic && saved.end
              ? start
              : named !== undefined
                ? this.clamp("endOffsets", partition, named, lowN, highN)
                : (endAt?.get(partition) ?? highN);
        this.end.set(partition, end);
        if (start >= end) this.done.add(partition);
      }
    }
    return this.position();
  }

  /** The first offset per partition whose record's Kafka timestamp is at or after `ts` (the end offset when none is). */
  private async offsetsAt(admin: Admin, ts: number): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const { partition, offset } of await admin.fetchTopicOffsetsByTimestamp(this.opts.topic, ts)) out.set(partition, Number(offset));
    return out;
  }

  /** An offset of the range inside what the partition holds now, with a warning when it was not. */
  private clamp(param: string, partition: number, offset: number, low: number, high: number): number {
    if (offset < low) this.log.warn(`${param}: partition ${partition} starts at ${low} (older records were deleted by retention); reading from there, not from ${offset}`);
    if (offset > high) this.log.warn(`${param}: partition ${partition} ends at ${high} today; ${offset} is beyond it, so the range stops at ${high}`);
    return Math.min(Math.max(offset, low), high);
  }

  private async committedOffsets(admin: Admin): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    const res = await admin.fetchOffsets({ groupId: this.opts.groupId, topics: [this.opts.topic] });
    for (const t of res) for (const p of t.partitions) if (Number(p.offset) >= 0) out.set(p.partition, Number(p.offset));
    if (out.size === 0) this.log.info(`consumer group "${this.opts.groupId}" has no committed offsets; starting from the earliest`);
    return out;
  }

  private position(): KafkaPosition {
    const next: Record<string, string> = {};
    for (const [p, o] of this.next) next[String(p)] = String(o);
    if (!this.bounded) return { topic: this.opts.topic, next };
    const end: Record<string, string> = {};
    for (const [p, o] of this.end) end[String(p)] = String(o);
    return { topic: this.opts.topic, next, end };
  }

  private allDone(): boolean {
    return this.bounded && this.done.size >= this.end.size;
  }

  async run(emit: EmitBatch, signal: AbortSignal): Promise<void> {
    if (this.allDone()) {
      if (this.done.size > 0) await emit({ records: [], position: this.position(), idlePartitions: [...this.done] });
      return;
    }
    if (signal.aborted) return;
    const { topic } = this.opts;
    const groupId = `${this.opts.groupId}.${randomBytes(4).toString("hex")}`;
    const consumer = this.opts.kafka.consumer({
      groupId,
      allowAutoTopicCreation: false,
      sessionTimeout: 30_000,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: 500,
      readUncommitted: false,
      retry: { retries: 8, restartOnFailure: async () => false },
    });
    this.consumer = consumer;

    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        if (err === undefined) resolve();
        else reject(err instanceof Error ? this.fail(err.message) : this.fail(String(err)));
      };
      const onAbort = () => finish();
      signal.addEventListener("abort", onAbort);

      // Batches of only control records or aborted transactions never reach eachBatch; step over them.
      consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => {
        if (payload.topic !== topic || payload.batchSize > 0 || signal.aborted) return;
        const after = Number(payload.lastOffset) + 1;
        if (after > (this.next.get(payload.partition) ?? 0)) void this.handOver(emit, [], payload.partition, after, undefined);
      });
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (!payload.restart) finish(payload.error);
      });
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        const assigned = payload.memberAssignment[topic] ?? [];
        if (assigned.length < this.next.size) {
          this.log.warn(`consumer group "${groupId}" gave this job ${assigned.length} of ${this.next.size} partitions; is another runner running the same job?`);
        }
      });

      void (async () => {
        try {
          await consumer.connect();
          await consumer.subscribe({ topics: [topic], fromBeginning: true });
          await consumer.run({
            autoCommit: false,
            eachBatchAutoResolve: false,
            partitionsConsumedConcurrently: 1,
            eachBatch: async (payload) => {
              await this.onBatch(payload, emit, signal);
              if (this.allDone()) finish();
            },
          });
          for (const [partition, offset] of this.next) {
            if (!this.done.has(partition)) consumer.seek({ topic, partition, offset: String(offset) });
          }
          const paused = [...this.done];
          if (paused.length > 0) consumer.pause([{ topic, partitions: paused }]);
        } catch (err) {
          finish(err);
        }
      })();
    });
  }

  private async onBatch({ batch, heartbeat, resolveOffset }: EachBatchPayload, emit: EmitBatch, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const p = batch.partition;
    this.highWatermark.set(p, Number(batch.highWatermark));
    if (this.done.has(p)) return;
    const expected = this.next.get(p) ?? 0;
    const end = this.bounded ? (this.end.get(p) ?? 0) : Number.POSITIVE_INFINITY;
    const records: SourceRecord[] = [];
    let next = expected;
    for (const m of batch.messages) {
      const offset = Number(m.offset);
      if (offset < next) continue; // before the position (a fetch from before the seek)
      if (offset >= end) break;
      records.push({ kind: "raw", raw: m.value ?? EMPTY, origin: { partition: p, offset: m.offset, topic: batch.topic } });
      next = offset + 1;
    }
    // Control records (transaction markers) at the tail of the batch are stepped over too.
    const last = Number(batch.lastOffset()) + 1;
    if (last > next && last <= end) next = last;
    // kafkajs fetches from the last resolved offset: without this, every fetch would start again at
    // the seek and a partition would never get past its first fetch's worth (maxBytesPerPartition).
    // Resolving is kafkajs-local (autoCommit is off): the job's position stays the checkpointed one.
    if (next === expected && records.length === 0) {
      resolveOffset(batch.lastOffset());
      return;
    }
    await this.handOver(emit, records, p, next, heartbeat);
    resolveOffset(batch.lastOffset());
  }

  /** Moves partition `p` to `next`, then hands the records over and waits until the job took them. */
  private async handOver(emit: EmitBatch, records: SourceRecord[], p: number, next: number, heartbeat: (() => Promise<void>) | undefined): Promise<void> {
    this.next.set(p, Math.max(next, this.next.get(p) ?? 0));
    let idlePartitions: number[] | undefined;
    if (this.bounded && next >= (this.end.get(p) ?? 0) && !this.done.has(p)) {
      this.done.add(p);
      idlePartitions = [p];
      this.consumer?.pause([{ topic: this.opts.topic, partitions: [p] }]);
    }
    const batch: SourceBatch = idlePartitions ? { records, position: this.position(), idlePartitions } : { records, position: this.position() };
    const taken = emit(batch);
    if (!heartbeat) return taken;
    // Keep the group membership alive while a slow job holds the batch.
    let waiting = true;
    void taken.finally(() => {
      waiting = false;
    });
    while (waiting) {
      await Promise.race([taken, new Promise((r) => setTimeout(r, 3_000))]);
      if (waiting) await heartbeat().catch(() => {});
    }
  }

  inputMetrics(): SourceInputMetrics {
    const lag: Record<string, number> = {};
    for (const [p, next] of this.next) {
      const end = this.bounded ? Math.min(this.end.get(p) ?? 0, this.highWatermark.get(p) ?? 0) : (this.highWatermark.get(p) ?? next);
      lag[String(p)] = Math.max(0, end - next);
    }
    return { input: this.opts.topic, lag };
  }

  async checkpointCompleted(position: JsonValue): Promise<void> {
    const parsed = positionSchema.safeParse(position);
    if (!parsed.success || parsed.data.topic !== this.opts.topic) return;
    this.committer.offer(Object.entries(parsed.data.next).map(([partition, offset]) => ({ partition: Number(partition), offset })));
  }

  async close(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = undefined;
    if (consumer) await consumer.disconnect();
    await this.committer.flush(3_000);
  }
}
