// What the Kafka sink's two-phase commit needs from kafkajs beyond its public API: the producer id
// and epoch of a transactional producer (to record a pending transaction in the checkpoint), and
// committing a transaction of a producer that died (EndTxn with the recorded id and epoch) without
// InitProducerId, which would abort it. Flink's FlinkKafkaInternalProducer does the same to the
// Java client by reflection. kafkajs 2.2.4 is its last release; the internals used here are checked
// when this module loads, so another version fails at once with a clear error, never silently.
import { createRequire } from "node:module";
import type { Kafka } from "kafkajs";
import { z } from "zod";

const require = createRequire(import.meta.url);

/** The producer id and epoch a transactional id was given by its last InitProducerId in this process. */
export interface ProducerIdentity {
  /** An int64, as kafkajs decodes it (a decimal string). */
  producerId: string;
  producerEpoch: number;
}

interface BrokerLike {
  initProducerId(req: { transactionalId?: string; transactionTimeout: number }): Promise<unknown>;
  endTxn(req: { transactionalId: string; producerId: string; producerEpoch: number; transactionResult: boolean }): Promise<unknown>;
}
interface ClusterLike {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(req: { groupId: string; coordinatorType: number }): Promise<BrokerLike>;
}

const identities = new Map<string, ProducerIdentity>();

const KAFKAJS_INTERNALS = "kafkajs internals (src/broker, private:Kafka:createCluster) changed: the exactly-once Kafka sink needs kafkajs 2.2.x";

/** Records every InitProducerId answer for a transactional id, in every kafkajs client of this process. */
function installIdentityCapture(): void {
  const Broker = require("kafkajs/src/broker/index.js") as { prototype: BrokerLike & { __keyflowCapture?: true } };
  const proto = Broker.prototype;
  if (typeof proto.initProducerId !== "function" || typeof proto.endTxn !== "function") throw new Error(KAFKAJS_INTERNALS);
  if (proto.__keyflowCapture) return;
  const original = proto.initProducerId;
  const identity = z.object({ producerId: z.union([z.string().regex(/^\d+$/), z.number().int()]), producerEpoch: z.number().int() });
  proto.initProducerId = async function (this: BrokerLike, req) {
    const res = await original.call(this, req);
    if (req.transactionalId) {
      // Never fails the producer: an answer not understood leaves the id unknown, and prepareCommit
      // then refuses to record a transaction it could not finish on recovery.
      const parsed = identity.safeParse(res);
      if (parsed.success) identities.set(req.transactionalId, { producerId: String(parsed.data.producerId), producerEpoch: parsed.data.producerEpoch });
      else identities.delete(req.transactionalId);
    }
    return res;
  };
  proto.__keyflowCapture = true;
}
installIdentityCapture();

/** The producer id and epoch of `transactionalId`'s producer in this process, once it has initialised. */
export function producerIdentity(transactionalId: string): ProducerIdentity | undefined {
  return identities.get(transactionalId);
}

function createCluster(kafka: Kafka): ClusterLike {
  const sym = Object.getOwnPropertySymbols(kafka).find((s) => s.description === "private:Kafka:createCluster");
  const factory: unknown = sym === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[sym];
  if (typeof factory !== "function") throw new Error(KAFKAJS_INTERNALS);
  return (factory as (o: object) => ClusterLike)({});
}

const TRANSACTION_COORDINATOR = 1;
const RETRIABLE = new Set(["CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "NOT_COORDINATOR_FOR_GROUP", "GROUP_COORDINATOR_NOT_AVAILABLE"]);
/** The transaction is no longer the one recorded: the broker aborted it (timeout) or a newer producer fenced it. */
const LOST = new Set(["PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE"]);

/** A recorded transaction the broker no longer holds open and never committed (see commitRecoveredTransaction). */
export class TransactionLostError extends Error {
  override readonly name = "TransactionLostError";
  constructor(
    message: string,
    readonly transactionalId: string,
    /** The broker's answer to EndTxn: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, ... */
    readonly answer: string,
  ) {
    super(message);
  }
}

/**
 * Commits the transaction `identity` opened under `transactionalId` in an earlier run (phase 2 of a
 * checkpoint that was recorded before the run died). Idempotent while the transactional id has not
 * been initialised again: committing a transaction the broker already committed answers NONE.
 * Throws TransactionLostError when the broker no longer holds it (it aborted it after the
 * transaction timeout, or a newer producer fenced it): that output is gone.
 */
export async function commitRecoveredTransaction(kafka: Kafka, transactionalId: string, identity: ProducerIdentity, attempts = 20): Promise<void> {
  const cluster = createCluster(kafka);
  await cluster.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const coordinator = await cluster.findGroupCoordinator({ groupId: transactionalId, coordinatorType: TRANSACTION_COORDINATOR });
        await coordinator.endTxn({ transactionalId, producerId: identity.producerId, producerEpoch: identity.producerEpoch, transactionResult: true });
        return;
      } catch (err) {
        const type = typeof err === "object" && err !== null && "type" in err ? String(err.type) : "";
        if (LOST.has(type)) {
          throw new TransactionLostError(
            `the transaction of producer ${identity.producerId} epoch ${identity.producerEpoch} under transactional id "${transactionalId}" can no longer be committed (${type}): the broker aborted it (its transaction timeout passed before the job recovered) or another producer took the id over; that checkpoint's output is lost`,
            transactionalId,
            type,
          );
        }
        if (!RETRIABLE.has(type) || attempt >= attempts) throw err;
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * attempt)));
      }
    }
  } finally {
    await cluster.disconnect().catch(() => {});
  }
}

/**
 * What became of a transaction recorded in a checkpoint that was never marked committed: it is
 * committed now ("committed": the broker committed it earlier, and EndTxn(commit) with the same
 * producer id and epoch answers NONE, or it was still open and this call committed it), or it is
 * "lost": the broker answered with a fencing error, because its transaction timeout passed and it
 * aborted the transaction (since KIP-360 a timeout abort bumps the producer epoch: PRODUCER_FENCED,
 * INVALID_PRODUCER_EPOCH for the EndTxn versions kafkajs sends; INVALID_TXN_STATE on brokers that abort
 * without a bump) or a newer producer initialised the id. Neither answer is given for a transaction
 * the broker committed while its id was left alone, which is why the writer never initialises the id
 * of a recovered transaction before the checkpoint is marked committed (./writer.ts). Other errors
 * (broker unreachable) are thrown: they decide nothing.
 */
export async function recoverTransaction(kafka: Kafka, transactionalId: string, identity: ProducerIdentity): Promise<{ outcome: "committed" } | { outcome: "lost"; answer: string }> {
  try {
    await commitRecoveredTransaction(kafka, transactionalId, identity);
    return { outcome: "committed" };
  } catch (err) {
    if (err instanceof TransactionLostError) return { outcome: "lost", answer: err.answer };
    throw err;
  }
}
