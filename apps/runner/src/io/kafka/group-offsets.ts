// Writes a Kafka source's checkpointed offsets to the job's stable consumer group, for lag tools and
// `startFrom: "committed"`. The group has no consuming members (each run consumes in a group of its
// own, see ./source.ts), so a short-lived consumer joins it, commits, and leaves: about 100 ms, where
// kafkajs' admin.setOffsets spends 5 s in a fetch wait. Commits are off the checkpoint's path: at
// most one in flight, the newest offsets win, and a failure is only logged.
import type { Kafka } from "kafkajs";
import type { Logger } from "../../log";
import { errorMessage } from "../../log";

export interface PartitionOffset {
  partition: number;
  offset: string;
}

export async function commitGroupOffsets(kafka: Kafka, groupId: string, topic: string, partitions: readonly PartitionOffset[]): Promise<void> {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 50, sessionTimeout: 10_000, heartbeatInterval: 1_000, retry: { retries: 2 } });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: false });
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({ autoCommit: false, eachBatch: async () => {} });
    consumer.pause([{ topic }]);
    await joined;
    await consumer.commitOffsets(partitions.map((p) => ({ topic, ...p })));
  } finally {
    await consumer.disconnect();
  }
}

export class GroupOffsetCommitter {
  private inflight: Promise<void> | undefined;
  private pending: readonly PartitionOffset[] | undefined;
  private lastAt = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly groupId: string,
    private readonly topic: string,
    private readonly log: Logger,
    private readonly minIntervalMs = 5_000,
  ) {}

  /** Schedules a commit of `offsets`; returns at once. */
  offer(offsets: readonly PartitionOffset[]): void {
    this.pending = offsets;
    if (!this.inflight && Date.now() - this.lastAt >= this.minIntervalMs) this.inflight = this.drain();
  }

  private async drain(): Promise<void> {
    while (this.pending) {
      const offsets = this.pending;
      this.pending = undefined;
      this.lastAt = Date.now();
      try {
        await commitGroupOffsets(this.kafka, this.groupId, this.topic, offsets);
      } catch (err) {
        this.log.debug(`committing offsets to group "${this.groupId}" failed (harmless: offsets live in checkpoints): ${errorMessage(err)}`);
      }
    }
    this.inflight = undefined;
  }

  /** Commits what is pending (e.g. the final checkpoint's offsets), waiting at most `timeoutMs`. */
  async flush(timeoutMs: number): Promise<void> {
    if (!this.inflight && this.pending) this.inflight = this.drain();
    const inflight = this.inflight;
    if (!inflight) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([inflight, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    if (timer) clearTimeout(timer);
  }
}
