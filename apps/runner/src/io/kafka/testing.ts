// Helpers of the integration tests against the real broker: the brokers from the environment, and
// a topic's committed output read to its end. Test code only (imported by *.int.test.ts).
import { randomBytes } from "node:crypto";
import type { Admin, Kafka } from "kafkajs";
import { readEnv } from "../../env";
import { eventually } from "../../../test/run-cli";

/** KAFKA_BROKERS, or a clear failure saying how to start the broker. */
export function requireKafkaBrokers(): readonly string[] {
  const brokers = readEnv().kafkaBrokers;
  if (!brokers) {
    throw new Error("KAFKA_BROKERS is not set: this integration test needs the real broker. Start one with `npm run services` and export the KAFKA_BROKERS line it prints.");
  }
  return brokers;
}

/**
 * Every message of `topic`, read with read_committed from the start until the reader has passed the
 * end offsets of every partition (transaction markers included), as sorted "key|value" strings.
 */
export async function readCommitted(kafka: Kafka, admin: Admin, topic: string): Promise<string[]> {
  const ends = new Map<number, number>();
  for (const o of await admin.fetchTopicOffsets(topic)) if (Number(o.high) > Number(o.low)) ends.set(o.partition, Number(o.high));
  const out: string[] = [];
  const reached = new Set<number>();
  const consumer = kafka.consumer({ groupId: `keyflow-it-reader-${randomBytes(4).toString("hex")}`, maxWaitTimeInMs: 100, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) out.push(`${m.key?.toString("utf8") ?? ""}|${m.value?.toString("utf8") ?? ""}`);
      if (Number(batch.lastOffset()) + 1 >= (ends.get(batch.partition) ?? 0)) reached.add(batch.partition);
    },
  });
  try {
    await eventually(() => [...ends.keys()].every((p) => reached.has(p)), `reading "${topic}" to its end offsets ${JSON.stringify([...ends])}`, 120_000);
  } finally {
    await consumer.disconnect();
  }
  return out.sort();
}

/** A JSON request to the runner's HTTP API at `baseUrl`: the status and the parsed body. */
export async function requestJson<T>(baseUrl: string, method: string, url: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${baseUrl}${url}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}
