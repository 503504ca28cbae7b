// KafkaWriter against the REAL broker (KAFKA_BROKERS): sends queued behind the request in flight go
// out merged, in order, none lost, under both guarantees; the queue stays bounded (backpressure).
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Message } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../log";
import { eventually } from "../../../test/run-cli";
import { readCommitted, requireKafkaBrokers } from "./testing";
import { KafkaWriter, MAX_QUEUED_BYTES, type DeliveryGuarantee } from "./writer";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const kafka = new Kafka({ clientId: `keyflow-writer-it-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();

beforeAll(async () => {
  await admin.connect();
});
afterAll(async () => {
  await admin.disconnect();
});

/**
 * `topic` read committed, in offset order, once its committed end passed `messages`: a commit's
 * markers reach the partition after EndTxn returns, and until then the end offset leaves it out.
 */
async function readAll(topic: string, messages: number): Promise<string[]> {
  await eventually(async () => Number((await admin.fetchTopicOffsets(topic))[0]?.high ?? 0) >= messages, `the committed end of "${topic}" past ${messages}`);
  return readCommitted(kafka, admin, topic, false);
}

async function writer(guarantee: DeliveryGuarantee, topic: string): Promise<KafkaWriter> {
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  const w = new KafkaWriter({ kafka, admin: async () => admin, topic, guarantee, transactionalId: `${topic}.tx`, what: `writer "${topic}"`, log: createLogger("warn") });
  await w.open();
  return w;
}

describe.each(["at-least-once", "exactly-once"] as const)("KafkaWriter (%s)", (guarantee) => {
  it("merges the sends made while a request is in flight, and delivers every message once, in order", async () => {
    const topic = `writer-${run}-${guarantee}-merge`;
    const w = await writer(guarantee, topic);
    const sent: string[] = [];
    // As the engine loop hands batches: each send awaited before the next batch.
    for (let b = 0; b < 300; b++) {
      const batch: Message[] = Array.from({ length: 5 }, (_, i) => ({ key: null, value: `m-${b}-${i}` }));
      sent.push(...batch.map((m) => String(m.value)));
      await w.send(batch);
    }
    await w.prepareCommit();
    await w.commit();
    await w.close();
    expect(await readAll(topic, sent.length)).toEqual(sent.map((v) => `|${v}`));
    expect(w.produceRequests).toBeGreaterThan(0);
    expect(w.produceRequests).toBeLessThan(300);
  });

  it("keeps what waits behind the request in flight bounded: a send over the bound waits until enough went out", async () => {
    const topic = `writer-${run}-${guarantee}-bound`;
    const w = await writer(guarantee, topic);
    const value = "x".repeat(100_000);
    for (let b = 0; b < 60; b++) {
      await w.send([{ key: null, value: `${b}:${value}` }]);
      expect(w.waitingBytes).toBeLessThanOrEqual(MAX_QUEUED_BYTES);
    }
    await w.prepareCommit();
    await w.commit();
    await w.close();
    expect((await readAll(topic, 60)).map((v) => v.slice(1).split(":")[0])).toEqual(Array.from({ length: 60 }, (_, b) => String(b)));
  });
});
