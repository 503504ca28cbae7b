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
 * end offsets of every partition (transaction markers included), as sorted "key|value" strings (or
 * in the order read, `sorted` false: offset order within a partition).
 */
export async function readCommitted(kafka: Kafka, admin: Admin, topic: string, sorted = true): Promise<string[]> {
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
  return sorted ? out.sort() : out;
}

/** A JSON request to the runner's HTTP API (with its bearer token): the status and the parsed body. */
export async function requestJson<T>(runner: { url: string; token: string }, method: string, url: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${runner.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${runner.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as T };
}

/**
 * `events` payments into partition 0 of `topic` (created by the caller), event times rising 25 ms
 * apart (ending an hour ago) over `cards` cards; every 40th payment is followed by a redelivered copy (same txId), which
 * a dedup node holds back. Sent 5 000 to a request, as a producer batching would.
 */
/** `malformedEvery`: every n-th payment is followed by a line that is not JSON (a dead letter), unique by its index. */
export async function produceTestPayments(kafka: Kafka, topic: string, events: number, cards: number, malformedEvery?: number): Promise<void> {
  // Event times end an hour ago: sink.kafka stamps messages with their event time, and the broker's
  // time-based retention (24 h in `npm run services`, 7 days by default) rolls and deletes by timestamp.
  const t0 = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000 - events * 25;
  const values: string[] = [];
  for (let i = 0; values.length < events; i++) {
    const raw = JSON.stringify({ txId: `t${i}`, cardId: `c${(i * 7_919) % cards}`, amount: (i * 31) % 500, ts: t0 + i * 25 });
    values.push(raw);
    if (i % 40 === 0 && values.length < events) values.push(raw);
    if (malformedEvery !== undefined && i % malformedEvery === malformedEvery - 1 && values.length < events) values.push(`{"txId":"bad-${i}", not json`);
  }
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (let at = 0; at < values.length; at += 5_000) {
      await producer.send({ topic, acks: -1, messages: values.slice(at, at + 5_000).map((value) => ({ partition: 0, value })) });
    }
  } finally {
    await producer.disconnect();
  }
}

/**
 * The crash test's and the runner bench's pipeline: `inputTopic` (bounded) -> dedup (txId) -> keyBy
 * (cardId) -> velocity (4 in 5 min) -> `<outputBase>-alerts`, with dedup's held-back copies to
 * `<outputBase>-dupes` and velocity's late records to `<outputBase>-late`, all Kafka sinks.
 * `dedup: false` leaves dedup and its `-dupes` sink out (the records go straight to keyBy): a graph
 * with one shuffle, which runs as parallel subtasks (dedup then keyBy re-keys, which runs in one thread).
 */
export function dedupVelocityPipeline(o: { name: string; inputTopic: string; outputBase: string; guarantee: "exactly-once" | "at-least-once"; checkpointIntervalMs: number; dedup?: boolean }) {
  const sink = (id: string) => ({ id, type: "sink.kafka", params: { topic: `${o.outputBase}-${id}`, deliveryGuarantee: o.guarantee } });
  const dedup = o.dedup !== false;
  return {
    format: "keyflow.pipeline/v1",
    name: o.name,
    settings: { checkpointIntervalMs: o.checkpointIntervalMs },
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: o.inputTopic, bounded: true, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1000 } },
      ...(dedup ? [{ id: "dedup", type: "dedup", params: { field: "txId", ttlMs: "10m" } }] : []),
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold: 4, windowMs: "5m", idField: "txId" } },
      sink("alerts"),
      ...(dedup ? [sink("dupes")] : []),
      sink("late"),
    ],
    edges: [
      ...(dedup
        ? [
            { from: "payments", to: "dedup" },
            { from: "dedup", to: "byCard" },
            { from: "dedup:duplicates", to: "dupes" },
          ]
        : [{ from: "payments", to: "byCard" }]),
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
      { from: "velocity:late", to: "late" },
    ],
  };
}
