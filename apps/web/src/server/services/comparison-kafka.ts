// Reads a topic for a comparison: from the start up to the end offsets it had when the read began
// (so a running job's later output does not keep the read going), read_committed so that only
// alerts of committed transactions count, as an exactly-once sink's reader would see them.
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { TRPCError } from "@trpc/server";

export interface TopicMessage {
  topic: string;
  partition: number;
  offset: string;
  timestamp: number;
  key: string | null;
  value: string | null;
}

export interface TopicRead {
  topic: string;
  /** False when the topic does not exist (yet): nothing was written to it. */
  exists: boolean;
  messages: TopicMessage[];
  /** True when the read stopped at `maxMessages` before the end offsets. */
  truncated: boolean;
}

const READ_TIMEOUT_MS = 60_000;

export function kafkaClient(brokers: readonly string[]): Kafka {
  return new Kafka({ clientId: `keyflow-web-comparison`, brokers: [...brokers], logLevel: logLevel.NOTHING });
}

/** The end offset of each non-empty partition of `topic`, or null when the topic does not exist. */
async function endOffsets(admin: Admin, topic: string): Promise<Map<number, bigint> | null> {
  const topics = await admin.listTopics();
  if (!topics.includes(topic)) return null;
  const ends = new Map<number, bigint>();
  for (const o of await admin.fetchTopicOffsets(topic)) if (BigInt(o.high) > BigInt(o.low)) ends.set(o.partition, BigInt(o.high));
  return ends;
}

export async function readTopicToEnd(kafka: Kafka, topic: string, maxMessages: number): Promise<TopicRead> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `keyflow.comparison.${randomBytes(6).toString("hex")}`;
  try {
    const ends = await endOffsets(admin, topic);
    if (ends === null) return { topic, exists: false, messages: [], truncated: false };
    if (ends.size === 0) return { topic, exists: true, messages: [], truncated: false };
    const messages: TopicMessage[] = [];
    const reached = new Set<number>();
    let truncated = false;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, readUncommitted: false });
    await consumer.connect();
    try {
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      const done = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new TRPCError({ code: "TIMEOUT", message: `reading "${topic}" to its end offsets ${JSON.stringify([...ends].map(([p, o]) => [p, String(o)]))} took over ${READ_TIMEOUT_MS / 1000} s (an open transaction that never commits keeps read_committed readers behind it)` })),
          READ_TIMEOUT_MS,
        );
        const check = () => {
          if (truncated || [...ends.keys()].every((p) => reached.has(p))) {
            clearTimeout(timer);
            resolve();
          }
        };
        // Batch ends, including batches of transaction markers only (which never reach eachBatch):
        // a partition whose last record is a commit marker is read once the marker is passed.
        consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
          const end = ends.get(payload.partition);
          if (end !== undefined && BigInt(payload.lastOffset) + 1n >= end) reached.add(payload.partition);
          check();
        });
        void consumer.run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const end = ends.get(batch.partition);
            if (end === undefined) return;
            for (const m of batch.messages) {
              if (BigInt(m.offset) >= end) break;
              if (messages.length >= maxMessages) {
                truncated = true;
                break;
              }
              messages.push({ topic, partition: batch.partition, offset: m.offset, timestamp: Number(m.timestamp), key: m.key?.toString("utf8") ?? null, value: m.value?.toString("utf8") ?? null });
            }
            if (truncated) check();
          },
        });
      });
      await done;
    } finally {
      await consumer.disconnect();
    }
    return { topic, exists: true, messages, truncated };
  } finally {
    // The reader's group has no use once the read is over.
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}
