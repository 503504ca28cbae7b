// What the REAL broker (KAFKA_BROKERS) answers when recovery commits a transaction an uncommitted
// checkpoint lists (../io/kafka/transactions.ts recoverTransaction), and the decision built on those
// answers (./recover-epoch.ts): committed stays committed (EndTxn answers NONE), a transaction
// fenced by a newer producer of its id or aborted after its timeout is lost, and a checkpoint whose
// transactions are partly committed and partly lost is refused while an all-lost one is replayed.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { producerIdentity, recoverTransaction, type ProducerIdentity } from "../io/kafka/transactions";
import { readCommitted, requireKafkaBrokers } from "../io/kafka/testing";
import { silentLogger } from "../log";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, type CheckpointMeta } from "./checkpoints";
import { recoverEpoch, type TransactionProbe } from "./recover-epoch";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const TOPIC = `recover-epoch-${run}`;
const kafka = new Kafka({ clientId: `keyflow-recover-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
const producers: Producer[] = [];
const probe: TransactionProbe = (_owner, id, identity) => recoverTransaction(kafka, id, identity);

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }], waitForLeaders: true });
});

afterAll(async () => {
  for (const p of producers) await p.disconnect().catch(() => {});
  await admin?.disconnect();
});

/** A transaction under `transactionalId` holding one record (`transactionalId` as its value), left open. */
async function openTransaction(transactionalId: string, transactionTimeout = 60_000): Promise<{ identity: ProducerIdentity; commit: () => Promise<void> }> {
  const producer = kafka.producer({ transactionalId, transactionTimeout, idempotent: true, maxInFlightRequests: 1 });
  producers.push(producer);
  await producer.connect();
  const txn = await producer.transaction();
  await txn.send({ topic: TOPIC, messages: [{ value: transactionalId }] });
  const identity = producerIdentity(transactionalId);
  if (!identity) throw new Error(`no producer identity captured for "${transactionalId}"`);
  return { identity, commit: () => txn.commit() };
}

/** A newer producer of `transactionalId` initialises it: the broker bumps the epoch and aborts the open transaction. */
async function fence(transactionalId: string): Promise<void> {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  producers.push(producer);
  await producer.connect();
  const txn = await producer.transaction();
  await txn.abort();
}

const id = (name: string) => `keyflow.recover-${run}.${name}`;

describe("the broker's answers to recovery's EndTxn (kafkajs 2.2, Kafka 4)", () => {
  it("a committed transaction answers NONE on every later commit: committed, and visible once", async () => {
    const t = await openTransaction(id("committed"));
    await t.commit();
    expect(await recoverTransaction(kafka, id("committed"), t.identity)).toEqual({ outcome: "committed" });
    expect(await recoverTransaction(kafka, id("committed"), t.identity)).toEqual({ outcome: "committed" });
    expect((await readCommitted(kafka, admin, TOPIC)).filter((m) => m === `|${id("committed")}`)).toHaveLength(1);
  });

  it("an open transaction is committed by recovery", async () => {
    const t = await openTransaction(id("open"));
    expect(await recoverTransaction(kafka, id("open"), t.identity)).toEqual({ outcome: "committed" });
    expect(await readCommitted(kafka, admin, TOPIC)).toContain(`|${id("open")}`);
  });

  it("a transaction a newer producer of its id fenced is lost, and stays lost", async () => {
    const t = await openTransaction(id("fenced"));
    await fence(id("fenced"));
    const first = await recoverTransaction(kafka, id("fenced"), t.identity);
    expect(first.outcome).toBe("lost");
    console.log(`fenced transaction: ${JSON.stringify(first)}`);
    expect(await recoverTransaction(kafka, id("fenced"), t.identity)).toEqual(first);
    expect(await readCommitted(kafka, admin, TOPIC)).not.toContain(`|${id("fenced")}`);
  });

  // The commit-window case itself: the broker aborts a transaction once its timeout passed (its
  // check for expired transactions runs every 10 s by default). Waiting is the scenario, not an assertion on time.
  it("a transaction the broker aborted after its timeout is lost", { timeout: 60_000 }, async () => {
    const t = await openTransaction(id("expired"), 1_000);
    await new Promise((r) => setTimeout(r, 25_000));
    const r = await recoverTransaction(kafka, id("expired"), t.identity);
    console.log(`timed-out transaction: ${JSON.stringify(r)}`);
    expect(r.outcome).toBe("lost");
    expect(await readCommitted(kafka, admin, TOPIC)).not.toContain(`|${id("expired")}`);
  });
});

describe("recovery of an uncommitted checkpoint against the broker's answers", () => {
  const meta = (n: number, sinks: CheckpointMeta["sinks"], deadLetters: CheckpointMeta["deadLetters"]): CheckpointMeta => ({
    format: CHECKPOINT_FORMAT,
    id: n,
    jobId: "j",
    pipeline: { name: "p", digest: "d" },
    createdAt: "",
    processingTime: 0,
    stateBytes: 0,
    sources: { in: { offset: n } },
    sinks,
    deadLetters,
  });
  const handle = (transactionalId: string, identity: ProducerIdentity) => ({ transactionalId, slot: 0, open: true, ...identity });

  async function folderWith(second: CheckpointMeta): Promise<DirectoryCheckpointStore> {
    const store = new DirectoryCheckpointStore(mkdtempSync(path.join(tmpdir(), "keyflow-recover-it-")), 1);
    await store.acquire();
    await store.write(meta(1, { alerts: null }, null), new Uint8Array([1]));
    await store.markCommitted(1);
    await store.write(second, new Uint8Array([2]));
    return store;
  }

  it("the sink's transaction committed, the dead letters' aborted: refused, naming both", async () => {
    const sink = await openTransaction(id("mixed-sink"));
    const dlq = await openTransaction(id("mixed-dlq"));
    await sink.commit();
    await fence(id("mixed-dlq"));
    const store = await folderWith(meta(2, { alerts: handle(id("mixed-sink"), sink.identity) }, handle(id("mixed-dlq"), dlq.identity)));
    await expect(recoverEpoch((await store.latest())!, store, probe, silentLogger)).rejects.toThrow(
      new RegExp(`checkpoint 2 cannot be recovered exactly: .*lost .*the dead-letter output \\(transactional id "${id("mixed-dlq")}"\\).*committed .*node "alerts" \\(transactional id "${id("mixed-sink")}"\\)`),
    );
  });

  it("every transaction aborted: the committed checkpoint before is restored", async () => {
    const sink = await openTransaction(id("lost-sink"));
    const dlq = await openTransaction(id("lost-dlq"));
    await fence(id("lost-sink"));
    await fence(id("lost-dlq"));
    const store = await folderWith(meta(2, { alerts: handle(id("lost-sink"), sink.identity) }, handle(id("lost-dlq"), dlq.identity)));
    const r = await recoverEpoch((await store.latest())!, store, probe, silentLogger);
    expect([r.restored?.meta.id, r.restored?.committed, r.replayed?.lostCheckpoint]).toEqual([1, true, 2]);
  });
});
