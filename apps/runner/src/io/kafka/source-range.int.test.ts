// The Kafka source's bounded ranges against the REAL broker (KAFKA_BROKERS): a range given by offsets
// per partition, one given by instants (resolved by the broker's offsets-for-times lookup), and a
// restore in the middle of a range, which must read the rest of the SAME range and then end.
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonValue } from "@keyflow/operators";
import { silentLogger } from "../../log";
import type { SourceBatch } from "../types";
import { KafkaSource, type KafkaSourceOptions } from "./source";
import { requireKafkaBrokers } from "./testing";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const TOPIC = `it-${run}-range`;
const PER_PARTITION = 100;
/** Recent message timestamps (the broker deletes by timestamp after 24 h), one second apart. */
const T0 = Math.floor(Date.now() / 60_000) * 60_000 - 3_600_000;

const kafka = new Kafka({ clientId: `keyflow-range-it-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
const producer = kafka.producer();

function source(opts: Partial<KafkaSourceOptions>): KafkaSource {
  return new KafkaSource({
    nodeId: "payments",
    kafka,
    admin: async () => admin,
    topic: TOPIC,
    groupId: `keyflow.it.${run}.${randomBytes(3).toString("hex")}`,
    startFrom: "earliest",
    bounded: true,
    idleTimeoutMs: undefined,
    log: silentLogger,
    ...opts,
  });
}

/** Runs the source to its end (it must end by itself): "partition:offset" of every record, and the batches. */
async function readAll(src: KafkaSource, restored?: JsonValue): Promise<{ read: string[]; batches: SourceBatch[]; position: JsonValue }> {
  let position = await src.open(restored);
  const read: string[] = [];
  const batches: SourceBatch[] = [];
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 60_000);
  try {
    await src.run(async (batch) => {
      batches.push(batch);
      position = batch.position;
      for (const r of batch.records) read.push(`${r.origin.partition}:${r.origin.offset}`);
    }, abort.signal);
  } finally {
    clearTimeout(timer);
    await src.close();
  }
  expect(abort.signal.aborted, "the bounded source did not end by itself within 60 s").toBe(false);
  return { read, batches, position };
}

const range = (partition: number, from: number, to: number) => Array.from({ length: to - from }, (_, i) => `${partition}:${from + i}`);
const sorted = (xs: string[]) => [...xs].sort((a, b) => a.localeCompare(b, "en", { numeric: true }));

beforeAll(async () => {
  admin = kafka.admin();
  await Promise.all([admin.connect(), producer.connect()]);
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], waitForLeaders: true });
  const message = (partition: number, i: number) => ({ partition, timestamp: String(T0 + i * 1_000), value: JSON.stringify({ id: `${partition}-${i}`, ts: T0 + i * 1_000 }) });
  for (const partition of [0, 1]) await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: PER_PARTITION }, (_, i) => message(partition, i)) });
  await producer.disconnect();
}, 120_000);

afterAll(async () => {
  await admin?.deleteTopics({ topics: [TOPIC] }).catch(() => undefined);
  await admin?.disconnect();
});

describe("source.kafka bounded ranges on the real broker", () => {
  it("reads exactly the offsets asked for per partition (a partition not named runs to the end seen at the start), then ends", async () => {
    const { read, batches, position } = await readAll(source({ startOffsets: { "0": 10 }, endOffsets: { "0": 30, "1": 5 } }));
    expect(sorted(read)).toEqual(sorted([...range(0, 10, 30), ...range(1, 0, 5)]));
    // Each partition is handed over as idle once its end is reached: that is what sends the watermark to +∞.
    expect(new Set(batches.flatMap((b) => b.idlePartitions ?? []))).toEqual(new Set([0, 1]));
    expect(position).toEqual({ topic: TOPIC, next: { "0": "30", "1": "5" }, end: { "0": "30", "1": "5" } });
  });

  it("resolves a range of instants to offsets with the broker's offsets-for-times lookup", async () => {
    const { read, position } = await readAll(source({ startTime: T0 + 20_000, endTime: T0 + 50_000 }));
    expect(sorted(read)).toEqual(sorted([...range(0, 20, 50), ...range(1, 20, 50)]));
    expect(position).toEqual({ topic: TOPIC, next: { "0": "50", "1": "50" }, end: { "0": "50", "1": "50" } });
  });

  it("an instant past the last record reads nothing, and the source still ends", async () => {
    const { read } = await readAll(source({ startTime: T0 + 10 * 60_000 }));
    expect(read).toEqual([]);
  });

  it("restored mid-range, it reads the rest of the same range (the checkpoint's, not a new lookup)", async () => {
    const restored = { topic: TOPIC, next: { "0": "40", "1": "45" }, end: { "0": "50", "1": "50" } };
    // Different range params now: the checkpoint's range wins, as a restore must replay what came after it.
    const { read } = await readAll(source({ startTime: T0, endTime: T0 + 90_000 }), restored);
    expect(sorted(read)).toEqual(sorted([...range(0, 40, 50), ...range(1, 45, 50)]));
  });

  it("refuses a partition the topic does not have, naming the node and the param", async () => {
    await expect(source({ endOffsets: { "7": 3 } }).open(undefined)).rejects.toThrow(/node "payments" \(Kafka topic "it-[0-9a-f]+-range"\): endOffsets names partition 7, but the topic has partitions 0, 1/);
  });
});
