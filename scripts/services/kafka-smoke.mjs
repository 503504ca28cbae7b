#!/usr/bin/env node
// Smoke check for the local Kafka broker started by scripts/services/start.sh.
//
//   node scripts/services/kafka-smoke.mjs [BROKERS]
//
// BROKERS defaults to $KAFKA_BROKERS, else the port in .keyflow/services/kafka/port.
// Checks, with kafkajs (the client the app uses):
//   1. admin: create a 3-partition topic, list and describe it
//   2. plain produce + consume
//   3. transactions: commit, abort, commit with sendOffsets (consume-transform-produce)
//      then a read_committed consumer sees the committed records only, a read_uncommitted
//      consumer also sees the aborted one, and the group offset committed in the transaction
//      is visible to the admin client
//   4. auto topic creation on produce
// Exits 0 and prints "kafka smoke: OK" on success; exits 1 with the reason otherwise.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { randomUUID } from "node:crypto";
import { Kafka, logLevel, Partitioners } from "kafkajs";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

function brokersFromState() {
  try {
    const port = readFileSync(join(repoRoot, ".keyflow/services/kafka/port"), "utf8").trim();
    return port ? `127.0.0.1:${port}` : undefined;
  } catch {
    return undefined;
  }
}

const brokers = (process.argv[2] || process.env.KAFKA_BROKERS || brokersFromState() || "")
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
if (brokers.length === 0) {
  console.error("kafka smoke: no brokers (pass host:port, set KAFKA_BROKERS, or run scripts/services/start.sh kafka)");
  process.exit(1);
}

const overallTimeout = setTimeout(() => {
  console.error("kafka smoke: FAILED (timed out after 90s)");
  process.exit(1);
}, 90_000);
overallTimeout.unref();

const run = randomUUID().slice(0, 8);
const topic = `keyflow-smoke-${run}`;
const outTopic = `keyflow-smoke-out-${run}`;
const autoTopic = `keyflow-smoke-auto-${run}`;
const kafka = new Kafka({
  clientId: `keyflow-smoke-${run}`,
  brokers,
  // Quiet by default: on a fresh broker the first transaction makes kafkajs log retriable
  // errors (coordinator loading, CONCURRENT_TRANSACTIONS) that it then retries by itself.
  // Real failures surface as exceptions below. KAFKA_SMOKE_DEBUG=1 shows the client log.
  logLevel: process.env.KAFKA_SMOKE_DEBUG ? logLevel.INFO : logLevel.NOTHING,
});

const step = (msg) => console.error(`kafka smoke: ${msg}`);
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function consumeAll(t, { readUncommitted, expect, timeoutMs = 20_000 }) {
  const consumer = kafka.consumer({
    groupId: `keyflow-smoke-reader-${run}-${readUncommitted ? "ru" : "rc"}`,
    readUncommitted,
    maxWaitTimeInMs: 200,
  });
  const seen = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: t, fromBeginning: true });
    let done;
    const finished = new Promise((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push(message.value.toString());
        if (seen.length >= expect) done();
      },
    });
    await Promise.race([finished, new Promise((r) => setTimeout(r, timeoutMs))]);
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

const admin = kafka.admin();
const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: true });
const txProducer = kafka.producer({
  createPartitioner: Partitioners.DefaultPartitioner,
  transactionalId: `keyflow-smoke-tx-${run}`,
  idempotent: true,
  maxInFlightRequests: 1,
});

try {
  const t0 = Date.now();
  await admin.connect();
  const cluster = await admin.describeCluster();
  step(`connected to ${brokers.join(",")} (cluster ${cluster.clusterId}, ${cluster.brokers.length} broker(s), controller ${cluster.controller})`);

  // 1. admin
  const created = await admin.createTopics({
    waitForLeaders: true,
    topics: [
      { topic, numPartitions: 3, replicationFactor: 1 },
      { topic: outTopic, numPartitions: 1, replicationFactor: 1 },
    ],
  });
  assert(created, `createTopics returned false for ${topic}`);
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  assert(meta.topics[0].partitions.length === 3, "expected 3 partitions");
  step(`created topic ${topic} (3 partitions) and ${outTopic}`);

  // 2. plain produce
  await producer.connect();
  await producer.send({ topic: outTopic, messages: [{ key: "k", value: "plain-1", partition: 0 }] });
  step("plain produce ok");

  // 3. transactions
  await txProducer.connect();
  let tx = await txProducer.transaction();
  await tx.send({ topic: outTopic, messages: [{ key: "k", value: "committed-1", partition: 0 }] });
  await tx.commit();

  tx = await txProducer.transaction();
  await tx.send({ topic: outTopic, messages: [{ key: "k", value: "aborted-1", partition: 0 }] });
  await tx.abort();

  const eosGroup = `keyflow-smoke-eos-${run}`;
  tx = await txProducer.transaction();
  await tx.send({ topic: outTopic, messages: [{ key: "k", value: "committed-2", partition: 0 }] });
  await tx.sendOffsets({
    consumerGroupId: eosGroup,
    topics: [{ topic, partitions: [{ partition: 0, offset: "42" }] }],
  });
  await tx.commit();
  step("transactional produce: commit, abort, commit+sendOffsets ok");

  const committedView = await consumeAll(outTopic, { readUncommitted: false, expect: 3 });
  assert(
    JSON.stringify(committedView) === JSON.stringify(["plain-1", "committed-1", "committed-2"]),
    `read_committed consumer saw ${JSON.stringify(committedView)}`,
  );
  step(`read_committed consumer saw ${JSON.stringify(committedView)}`);

  const uncommittedView = await consumeAll(outTopic, { readUncommitted: true, expect: 4 });
  assert(uncommittedView.includes("aborted-1"), `read_uncommitted consumer saw ${JSON.stringify(uncommittedView)}`);
  step(`read_uncommitted consumer saw ${JSON.stringify(uncommittedView)}`);

  const offsets = await admin.fetchOffsets({ groupId: eosGroup, topics: [topic] });
  const p0 = offsets[0].partitions.find((p) => p.partition === 0);
  assert(p0 && p0.offset === "42", `transactional group offset: ${JSON.stringify(offsets)}`);
  step("offset committed inside the transaction is visible (42)");

  // 4. auto topic creation
  await producer.send({ topic: autoTopic, messages: [{ value: "auto" }] });
  const autoMeta = await admin.fetchTopicMetadata({ topics: [autoTopic] });
  step(`auto-created topic ${autoTopic} (${autoMeta.topics[0].partitions.length} partitions)`);

  await admin.deleteTopics({ topics: [topic, outTopic, autoTopic] });
  await admin.deleteGroups([eosGroup, `keyflow-smoke-reader-${run}-rc`, `keyflow-smoke-reader-${run}-ru`]).catch(() => {});
  console.log(`kafka smoke: OK (${Date.now() - t0} ms)`);
} catch (err) {
  console.error(`kafka smoke: FAILED: ${err?.stack || err}`);
  process.exitCode = 1;
} finally {
  await Promise.allSettled([txProducer.disconnect(), producer.disconnect(), admin.disconnect()]);
}
process.exit(process.exitCode ?? 0);
