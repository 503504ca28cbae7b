// A rule's Kafka side as the e2e tests drive it: a payments topic and an enforcement topic of the
// run's own, a producer of payments, and a reader of the enforcement topic as a downstream system
// reads it (committed transactions only).
import { Kafka, logLevel, type Consumer } from "kafkajs";

export interface RuleTopics {
  payments: string;
  enforcement: string;
  /** Sends `records` to partition 0 of the payments topic, idempotently, acked by all replicas. */
  produce(records: readonly object[]): Promise<void>;
  /** The enforcement topic's values so far, read_committed, in arrival order. */
  enforced: string[];
  consumer: Consumer;
}

export async function ruleTopics(brokers: string[], run: string): Promise<RuleTopics> {
  const payments = `e2e-${run}-payments`;
  const enforcement = `e2e-${run}-alerts`;
  const kafka = new Kafka({ clientId: `e2e-${run}`, brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: payments, numPartitions: 1 }, { topic: enforcement, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  const produce = async (records: readonly object[]) => {
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: payments, acks: -1, messages: records.map((r) => ({ partition: 0, value: JSON.stringify(r) })) });
    await producer.disconnect();
  };
  const enforced: string[] = [];
  const consumer = kafka.consumer({ groupId: `e2e-${run}-reader`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic: enforcement, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void enforced.push(message.value?.toString() ?? "") });
  return { payments, enforcement, produce, enforced, consumer };
}
