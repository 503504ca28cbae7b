// Reads a topic for a comparison: from the start (or a range's start) up to the end offsets it had
// when the read began, or a range's end (so a running job's later output does not keep the read
// going), read_committed so that only alerts of committed transactions count, as an exactly-once
// sink's reader would see them. A range by instants is resolved to offsets by the broker.
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
  /** Headers as text (the version tag of shadow alerts travels in one). */
  headers: Record<string, string>;
}

/** A part of a topic: offsets per partition (end exclusive) or instants; unset sides are the topic's start and current end. */
export interface TopicRange {
  startOffsets?: Readonly<Record<string, number>> | undefined;
  startTime?: number | undefined;
  endOffsets?: Readonly<Record<string, number>> | undefined;
  endTime?: number | undefined;
}

export interface TopicRead {
  topic: string;
  /** False when the topic does not exist (yet): nothing was written to it. */
  exists: boolean;
  messages: TopicMessage[];
  /** True when the read stopped at `maxMessages` before the end offsets. */
  truncated: boolean;
  /**
   * Partitions whose log starts past where the read was asked to start, with that log start offset:
   * the broker deleted their earlier messages (retention counts from the messages' timestamps, which
   * are event times, so a replay of old events can lose its alerts within minutes).
   */
  deletedBefore: Record<string, string>;
}

const READ_TIMEOUT_MS = 60_000;

export function kafkaClient(brokers: readonly string[]): Kafka {
  return new Kafka({ clientId: `keyflow-web-comparison`, brokers: [...brokers], logLevel: logLevel.NOTHING });
}

/** Start and end offsets of each partition of `topic` with something to read, or null when the topic does not exist. */
async function bounds(admin: Admin, topic: string, range: TopicRange | undefined): Promise<{ starts: Map<number, bigint>; ends: Map<number, bigint>; deletedBefore: Record<string, string> } | null> {
  const topics = await admin.listTopics();
  if (!topics.includes(topic)) return null;
  const byTime = async (ts: number | undefined) => (ts === undefined ? null : new Map((await admin.fetchTopicOffsetsByTimestamp(topic, ts)).map((o) => [o.partition, BigInt(o.offset)])));
  const startAt = await byTime(range?.startTime);
  const endAt = await byTime(range?.endTime);
  const starts = new Map<number, bigint>();
  const ends = new Map<number, bigint>();
  const deletedBefore: Record<string, string> = {};
  for (const o of await admin.fetchTopicOffsets(topic)) {
    const low = BigInt(o.low);
    const high = BigInt(o.high);
    const namedStart = range?.startOffsets?.[String(o.partition)];
    const namedEnd = range?.endOffsets?.[String(o.partition)];
    const start = namedStart !== undefined ? BigInt(namedStart) : (startAt?.get(o.partition) ?? low);
    const end = namedEnd !== undefined ? BigInt(namedEnd) : (endAt?.get(o.partition) ?? high);
    // Asked from the topic's beginning (or a named offset) but it starts later: deleted. (A start by
    // instant resolves among the messages left, so it cannot tell.)
    const asked = namedStart !== undefined ? BigInt(namedStart) : startAt ? undefined : 0n;
    if (asked !== undefined && low > asked) deletedBefore[String(o.partition)] = String(low);
    const from = start > low ? start : low;
    const to = end < high ? end : high;
    if (to > from) {
      starts.set(o.partition, from);
      ends.set(o.partition, to);
    }
  }
  return { starts, ends, deletedBefore };
}

export async function readTopicToEnd(kafka: Kafka, topic: string, maxMessages: number, range?: TopicRange): Promise<TopicRead> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `keyflow.comparison.${randomBytes(6).toString("hex")}`;
  try {
    const found = await bounds(admin, topic, range);
    if (found === null) return { topic, exists: false, messages: [], truncated: false, deletedBefore: {} };
    const { starts, ends, deletedBefore } = found;
    if (ends.size === 0) return { topic, exists: true, messages: [], truncated: false, deletedBefore };
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
            const start = starts.get(batch.partition) ?? 0n;
            if (end === undefined) return;
            for (const m of batch.messages) {
              if (BigInt(m.offset) < start) continue; // a fetch from before the seek
              if (BigInt(m.offset) >= end) break;
              if (messages.length >= maxMessages) {
                truncated = true;
                break;
              }
              const headers: Record<string, string> = {};
              for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.map(String).join(",") : v.toString();
              messages.push({ topic, partition: batch.partition, offset: m.offset, timestamp: Number(m.timestamp), key: m.key?.toString("utf8") ?? null, value: m.value?.toString("utf8") ?? null, headers });
            }
            if (truncated) check();
          },
        });
        // A range that starts inside the topic: go there instead of reading everything before it.
        for (const [partition, offset] of starts) if (offset > 0n) consumer.seek({ topic, partition, offset: String(offset) });
      });
      await done;
    } finally {
      await consumer.disconnect();
    }
    return { topic, exists: true, messages, truncated, deletedBefore };
  } finally {
    // The reader's group has no use once the read is over.
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
}
