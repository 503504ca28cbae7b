// A Kafka producer that commits with checkpoints, shared by sink.kafka and the dead-letter topic.
//
// at-least-once: an idempotent producer (acks=all, one request in flight, so no reordering or
//   duplicates from retries); every send is acknowledged before the checkpoint completes, so a
//   restore may write an epoch again but never loses one.
// exactly-once: one Kafka transaction per epoch under a stable transactionalId (per job and sink).
//   prepareCommit flushes the sends; commit commits the transaction after the checkpoint is durable.
//   A restarted job's producer, with the same transactionalId, fences the old one and aborts what it
//   left open. Known gap (kafkajs cannot resume a transaction by producer id and epoch): a crash
//   between commitTransaction and marking the checkpoint committed repeats that epoch once.
import { CompressionTypes, Partitioners, type Admin, type Kafka, type Message, type Producer, type Transaction } from "kafkajs";
import type { JsonValue } from "@keyflow/operators";
import type { Logger } from "../../log";
import { ensureTopic } from "./client";

export type DeliveryGuarantee = "exactly-once" | "at-least-once";

export interface KafkaWriterOptions {
  kafka: Kafka;
  admin: () => Promise<Admin>;
  topic: string;
  guarantee: DeliveryGuarantee;
  /** Required for exactly-once: stable across restarts of the same job. */
  transactionalId?: string;
  /** How long the broker keeps an open transaction: more than a checkpoint interval. */
  transactionTimeoutMs?: number;
  /** Names the writer in errors: `node "alerts"` or `the dead-letter topic`. */
  what: string;
  log: Logger;
}

export class KafkaWriter {
  private producer: Producer | undefined;
  private transaction: Transaction | undefined;
  /** The one send in flight; later sends wait for it (ordering and backpressure). */
  private inflight: Promise<void> = Promise.resolve();
  private failure: Error | undefined;

  constructor(private readonly opts: KafkaWriterOptions) {}

  get target(): string {
    return `kafka:${this.opts.topic}`;
  }

  private fail(message: string): Error {
    return new Error(`${this.opts.what} (Kafka topic "${this.opts.topic}"): ${message}`);
  }

  async open(): Promise<void> {
    const { kafka, guarantee, transactionalId } = this.opts;
    await ensureTopic(await this.opts.admin(), this.opts.topic);
    if (guarantee === "exactly-once" && !transactionalId) throw this.fail("exactly-once needs a transactionalId");
    this.producer = kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent: true,
      maxInFlightRequests: 1,
      ...(guarantee === "exactly-once" ? { transactionalId, transactionTimeout: this.opts.transactionTimeoutMs ?? 60_000 } : {}),
    });
    await this.producer.connect();
    if (guarantee === "exactly-once") {
      // Register the transactionalId now (InitProducerId): this fences a previous incarnation of the
      // job and aborts the transaction it left open, instead of waiting for the first record.
      const fence = await this.producer.transaction();
      await fence.abort();
    }
  }

  /** Queues `messages` behind the send in flight; resolves when the previous send completed. */
  async send(messages: Message[]): Promise<void> {
    if (messages.length === 0) return;
    await this.inflight;
    this.throwIfFailed();
    const producer = this.requireProducer();
    let sending: Promise<unknown>;
    if (this.opts.guarantee === "exactly-once") {
      this.transaction ??= await producer.transaction();
      sending = this.transaction.send({ topic: this.opts.topic, messages, compression: CompressionTypes.None });
    } else {
      sending = producer.send({ topic: this.opts.topic, messages, acks: -1 });
    }
    this.inflight = sending.then(
      () => undefined,
      (err: unknown) => {
        this.failure ??= this.fail(`send failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
  }

  /** Phase 1: every send acknowledged. */
  async prepareCommit(): Promise<JsonValue> {
    await this.inflight;
    this.throwIfFailed();
    if (this.opts.guarantee === "at-least-once") return null;
    return { transactionalId: this.opts.transactionalId ?? null, open: this.transaction !== undefined };
  }

  /** Phase 2: commits the epoch's transaction (exactly-once). */
  async commit(): Promise<void> {
    const txn = this.transaction;
    this.transaction = undefined;
    if (txn) await txn.commit();
  }

  async close(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    const txn = this.transaction;
    this.transaction = undefined;
    await this.inflight;
    if (txn && txn.isActive()) await txn.abort().catch((err: unknown) => this.opts.log.warn(`aborting the open transaction failed: ${String(err)}`));
    if (producer) await producer.disconnect();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  private requireProducer(): Producer {
    if (!this.producer) throw this.fail("the producer is not open");
    return this.producer;
  }
}
