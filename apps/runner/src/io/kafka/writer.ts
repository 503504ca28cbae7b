// A Kafka producer that commits with checkpoints, shared by sink.kafka and the dead-letter topic.
//
// at-least-once: an idempotent producer (acks=all, one request in flight, so no reordering or
//   duplicates from retries); every send is acknowledged before the checkpoint completes, so a
//   restore may write an epoch again but never loses one.
// exactly-once: Flink's TwoPhaseCommitSinkFunction. An epoch's records go into one Kafka transaction;
//   prepareCommit (the barrier) flushes them and returns the transaction's transactional id, producer
//   id and epoch; the driver writes them into `chk-<n>/_metadata.json` and fsyncs it; only then does
//   commit send EndTxn. A run that restores checkpoint n whose `_committed` marker is missing commits
//   the transaction it lists (./transactions.ts: EndTxn with the recorded id and epoch, no
//   InitProducerId, which would abort it); committing an already committed transaction is a no-op.
//
// Two transactional ids per sink and subtask, `<job>.<node>.<subtask>.0` and `.1`, used by turns (an
//   epoch's transaction under one, the next epoch's under the other): the epoch after checkpoint n
//   never writes under the id whose transaction checkpoint n may still need to commit on recovery,
//   and a new transaction never starts on the id that just committed (kafkajs then trips on the
//   broker's CONCURRENT_TRANSACTIONS, tulios/kafkajs#1315). An id is used again only after the
//   checkpoint that committed its previous transaction carries `_committed`, which is what makes a
//   recovery's re-commit safe: kafkajs's old EndTxn versions keep one producer epoch across the
//   transactions of a producer (no KIP-890 epoch bump), so a stale EndTxn would otherwise commit a
//   newer transaction's partial output. A bounded set of ids (not one per checkpoint, as Flink's
//   KafkaSink does) keeps the broker's transaction state from growing with every checkpoint.
//
// A producer that the broker fenced (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED: a newer producer
// initialised its transactional id, or the broker aborted its transaction after the timeout) is never
// replaced by a fresh one here: a fresh InitProducerId would in turn fence whichever runner now owns the
// id. The writer fails with a ProducerFencedError; the driver then asks the checkpoint folder's lease
// whether another runner took the job over (stop for good) or not (an expired transaction: restart).
import { CompressionTypes, Partitioners, type Admin, type Kafka, type Message, type Producer, type Transaction } from "kafkajs";
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";
import type { Logger } from "../../log";
import { ensureTopic } from "./client";
import { commitRecoveredTransaction, producerIdentity } from "./transactions";

/** The broker refused this writer's producer epoch: see the module comment. */
export class ProducerFencedError extends Error {
  override readonly name = "ProducerFencedError";
}

/** kafkajs error types (and PRODUCER_FENCED's code, which kafkajs 2.2 does not name) that mean "your producer epoch is over". */
const FENCED_TYPES = new Set(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"]);
const PRODUCER_FENCED_CODE = 90;

/** The fencing error type found in `err` or the errors it wraps (kafkajs' `cause`), if any. */
export function fencedErrorType(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; typeof e === "object" && e !== null && depth < 6; depth++) {
    if ("type" in e && typeof e.type === "string" && FENCED_TYPES.has(e.type)) return e.type;
    if ("code" in e && e.code === PRODUCER_FENCED_CODE) return "PRODUCER_FENCED";
    e = "cause" in e ? e.cause : undefined;
  }
  return undefined;
}

export type DeliveryGuarantee = "exactly-once" | "at-least-once";

export interface KafkaWriterOptions {
  kafka: Kafka;
  admin: () => Promise<Admin>;
  topic: string;
  guarantee: DeliveryGuarantee;
  /** Required for exactly-once: stable across restarts of the same job; `.0` and `.1` are appended. */
  transactionalId?: string;
  /** How long the broker keeps an open transaction: more than a checkpoint interval plus a recovery. */
  transactionTimeoutMs?: number;
  /** Names the writer in errors: `node "alerts"` or `the dead-letter topic`. */
  what: string;
  log: Logger;
}

/** What prepareCommit returns for an exactly-once sink, stored in the checkpoint. */
export const preparedTransactionSchema = z.object({
  transactionalId: z.string(),
  slot: z.union([z.literal(0), z.literal(1)]),
  /** False when the epoch wrote nothing (no transaction was begun): nothing to commit. */
  open: z.boolean(),
  producerId: z.string().regex(/^\d+$/).optional(),
  producerEpoch: z.number().int().optional(),
});
export type PreparedTransaction = z.infer<typeof preparedTransactionSchema>;

/** Payload bytes per produce request: well under the broker's default message.max.bytes (1 MiB). */
const MAX_REQUEST_BYTES = 512 * 1024;

/** Bytes that may wait behind the request in flight before send() makes its caller wait (backpressure). */
export const MAX_QUEUED_BYTES = 4 * MAX_REQUEST_BYTES;

function byteSize(v: Message["value"] | Message["key"]): number {
  if (v === null || v === undefined) return 0;
  return typeof v === "string" ? Buffer.byteLength(v) : v.byteLength;
}

/** A message's keys, value and headers in bytes, plus its record overhead (an estimate: what a request carries). */
function messageBytes(m: Message): number {
  let size = byteSize(m.value) + byteSize(m.key) + 64;
  for (const [k, h] of Object.entries(m.headers ?? {})) size += k.length + (Array.isArray(h) ? h.reduce((n, x) => n + byteSize(x), 0) : byteSize(h));
  return size;
}

/** How many of the first `sizes` go into one request: as many as fit in `maxBytes`, and at least one. */
export function requestLength(sizes: readonly number[], maxBytes: number): number {
  let n = 0;
  let bytes = 0;
  while (n < sizes.length && (n === 0 || bytes + (sizes[n] as number) <= maxBytes)) bytes += sizes[n++] as number;
  return n;
}

interface Slot {
  transactionalId: string;
  producer: Producer;
}

export class KafkaWriter {
  /** at-least-once: the one producer. */
  private producer: Producer | undefined;
  /** exactly-once: the two transactional producers used by turns. */
  private slots: Slot[] = [];
  private current: 0 | 1 = 0;
  private transaction: Transaction | undefined;
  /**
   * Messages waiting behind the request in flight, sent together in one request (or a few, by
   * MAX_REQUEST_BYTES) when it completes, as the Java producer's accumulator batches. One request per
   * send() made a request per engine batch: at 20 k records/s, 15 % of the runner's busy time went
   * into socket writes of a few alerts each. Nothing waits for a batch to fill: an idle writer sends
   * at once.
   */
  private queued: Message[] = [];
  /** messageBytes of each queued message, and their sum. */
  private queuedSizes: number[] = [];
  private queuedBytes = 0;
  /** Whether a request is in flight; `inflight` settles when it has (and the next, if any, started). */
  private sending = false;
  private inflight: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  /** Produce requests sent (metrics and tests: how well sends were merged). */
  produceRequests = 0;

  /** Bytes queued behind the request in flight (at most MAX_QUEUED_BYTES once send() resolved). */
  get waitingBytes(): number {
    return this.queuedBytes;
  }

  constructor(private readonly opts: KafkaWriterOptions) {}

  get target(): string {
    return `kafka:${this.opts.topic}`;
  }

  /** See CommittingWriter.writesBeforeCommit: commit() is a no-op at least once. */
  get writesBeforeCommit(): boolean {
    return this.opts.guarantee === "at-least-once";
  }

  private fail(message: string): Error {
    return new Error(`${this.opts.what} (Kafka topic "${this.opts.topic}"): ${message}`);
  }

  /** `err` as a ProducerFencedError when the broker fenced the producer of `transactionalId`; otherwise as it is. */
  private fenced(err: unknown, transactionalId: string | undefined, doing: string): unknown {
    const type = fencedErrorType(err);
    if (type === undefined) return err;
    return new ProducerFencedError(
      `${this.opts.what} (Kafka topic "${this.opts.topic}"): fenced while ${doing}: the broker refused transactional id "${transactionalId ?? "?"}" with ${type} ` +
        `(a newer producer initialised that id, i.e. another runner took this job over, or the broker aborted this runner's transaction after its ${this.opts.transactionTimeoutMs ?? 60_000} ms timeout); ` +
        `no fresh producer is started, since it would fence the new owner in turn`,
      { cause: err },
    );
  }

  /**
   * `restored`: what prepareCommit returned for the checkpoint being restored; `restoredCommitted`:
   * whether that checkpoint was marked committed. When it was not, its transaction is committed here
   * (phase 2 finished by the new run) before anything else touches its transactional id.
   */
  async open(restored?: JsonValue, restoredCommitted = true): Promise<void> {
    const { kafka, guarantee, transactionalId } = this.opts;
    await ensureTopic(await this.opts.admin(), this.opts.topic);
    const common = { createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 };
    if (guarantee === "at-least-once") {
      this.producer = kafka.producer(common);
      await this.producer.connect();
      return;
    }
    if (!transactionalId) throw this.fail("exactly-once needs a transactionalId");
    const parsed = restored === undefined || restored === null ? undefined : preparedTransactionSchema.safeParse(restored);
    if (parsed && !parsed.success) this.opts.log.warn(`the checkpoint's transaction handle is not understood (${JSON.stringify(restored)}); nothing to finish`);
    const pending = parsed?.success ? parsed.data : undefined;
    let recommitted: 0 | 1 | undefined;
    if (pending && pending.open && !restoredCommitted) {
      if (pending.producerId === undefined || pending.producerEpoch === undefined) throw this.fail(`the checkpoint lists transaction "${pending.transactionalId}" without its producer id and epoch`);
      await commitRecoveredTransaction(kafka, pending.transactionalId, { producerId: pending.producerId, producerEpoch: pending.producerEpoch }).catch((err: unknown) => {
        throw this.fail(`finishing the commit of the restored checkpoint: ${err instanceof Error ? err.message : String(err)}`);
      });
      this.opts.log.info(`committed transaction "${pending.transactionalId}" (producer ${pending.producerId}, epoch ${pending.producerEpoch}) left pending by the previous run`);
      recommitted = pending.slot;
    }
    const timeout = this.opts.transactionTimeoutMs ?? 60_000;
    for (const slot of [0, 1] as const) {
      const id = `${transactionalId}.${slot}`;
      const producer = kafka.producer({ ...common, transactionalId: id, transactionTimeout: timeout });
      await producer.connect();
      this.slots.push({ transactionalId: id, producer });
      // InitProducerId now fences a previous incarnation and aborts the transaction it left open
      // (output after the restored checkpoint, to be produced again), instead of at the first record.
      // The id whose transaction was just committed is left alone until its turn comes (its first
      // transaction initialises it), which is after the driver marked the checkpoint committed.
      if (slot !== recommitted) {
        await (async () => {
          const fence = await producer.transaction();
          await fence.abort();
        })().catch((err: unknown) => {
          throw this.fenced(err, id, "initialising");
        });
      }
    }
    this.current = recommitted === 0 ? 1 : 0;
  }

  /**
   * Queues `messages` behind the request in flight (in order; see `queued`). Resolves at once unless
   * more than MAX_QUEUED_BYTES wait: then when enough were sent. A failed request fails this call or the next.
   */
  async send(messages: Message[]): Promise<void> {
    this.throwIfFailed();
    for (const m of messages) {
      const size = messageBytes(m);
      this.queued.push(m);
      this.queuedSizes.push(size);
      this.queuedBytes += size;
    }
    this.pump();
    while (this.queuedBytes > MAX_QUEUED_BYTES && this.failure === undefined) await this.inflight;
    this.throwIfFailed();
  }

  /** Every queued message sent and acknowledged (or the failure thrown). */
  private async drained(): Promise<void> {
    while ((this.sending || this.queued.length > 0) && this.failure === undefined) await this.inflight;
    this.throwIfFailed();
  }

  /** Starts a request with what is queued, unless one is in flight (its completion starts the next). */
  private pump(): void {
    if (this.sending || this.queued.length === 0 || this.failure !== undefined) return;
    // A produce request carries one record batch per partition, and the broker refuses a batch over
    // message.max.bytes (1 MiB by default): what waits goes out in requests of MAX_REQUEST_BYTES.
    const n = requestLength(this.queuedSizes, MAX_REQUEST_BYTES);
    const batch = this.queued.splice(0, n);
    for (const size of this.queuedSizes.splice(0, n)) this.queuedBytes -= size;
    this.sending = true;
    this.produceRequests++;
    this.inflight = this.request(batch).then(
      () => {
        this.sending = false;
        this.pump();
      },
      (err: unknown) => {
        this.sending = false;
        const txId = this.opts.guarantee === "exactly-once" ? this.slots[this.current]?.transactionalId : undefined;
        const fenced = this.fenced(err, txId, "sending");
        this.failure ??= fenced instanceof ProducerFencedError ? fenced : this.fail(`send failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
  }

  /** One produce request: inside the epoch's transaction (begun by its first) for exactly-once. */
  private async request(messages: Message[]): Promise<void> {
    if (this.opts.guarantee === "exactly-once") {
      this.transaction ??= await this.requireSlot().producer.transaction();
      await this.transaction.send({ topic: this.opts.topic, messages, compression: CompressionTypes.None });
    } else {
      await this.requireProducer().send({ topic: this.opts.topic, messages, acks: -1 });
    }
  }

  /** Phase 1: every send acknowledged; for exactly-once, the transaction to record in the checkpoint. */
  async prepareCommit(): Promise<JsonValue> {
    await this.drained();
    if (this.opts.guarantee === "at-least-once") return null;
    const slot = this.requireSlot();
    const prepared: PreparedTransaction = { transactionalId: slot.transactionalId, slot: this.current, open: this.transaction !== undefined };
    if (this.transaction) {
      const identity = producerIdentity(slot.transactionalId);
      if (!identity) throw this.fail(`no producer id known for transactional id "${slot.transactionalId}"`);
      prepared.producerId = identity.producerId;
      prepared.producerEpoch = identity.producerEpoch;
    }
    return prepared;
  }

  /** Phase 2: the checkpoint listing the transaction is durable; commit it (exactly-once). */
  async commit(): Promise<void> {
    if (this.opts.guarantee === "at-least-once") return;
    const txn = this.transaction;
    this.transaction = undefined;
    if (!txn) return;
    const txId = this.slots[this.current]?.transactionalId;
    await txn.commit().catch((err: unknown) => {
      throw this.fenced(err, txId, "committing");
    });
    this.current = this.current === 0 ? 1 : 0;
  }

  async close(): Promise<void> {
    const producers = [...(this.producer ? [this.producer] : []), ...this.slots.map((s) => s.producer)];
    this.producer = undefined;
    this.slots = [];
    const txn = this.transaction;
    this.transaction = undefined;
    // What is still queued after the last checkpoint's flush is not sent: a restore replays it (at
    // least once), and an exactly-once transaction is aborted below anyway.
    this.queued = [];
    this.queuedSizes = [];
    this.queuedBytes = 0;
    await this.inflight;
    if (txn && txn.isActive()) await txn.abort().catch((err: unknown) => this.opts.log.warn(`aborting the open transaction failed: ${String(err)}`));
    for (const p of producers) await p.disconnect();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  private requireProducer(): Producer {
    if (!this.producer) throw this.fail("the producer is not open");
    return this.producer;
  }

  private requireSlot(): Slot {
    const s = this.slots[this.current];
    if (!s) throw this.fail("the transactional producers are not open");
    return s;
  }
}
