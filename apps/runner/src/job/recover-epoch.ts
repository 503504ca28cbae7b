// Recovery of a checkpoint whose commit the previous run never finished (no `_committed`): what became
// of each Kafka transaction it lists decides whether the job goes on from it, replays its epoch from
// the checkpoint before it, or refuses to start (issue 4, exactly-once; docs/ARCHITECTURE.md).
//
// A runner that writes chk-n and then stalls past the transaction timeout before committing finds, on
// recovery, that the broker aborted chk-n's transactions. When EVERY transaction chk-n lists is lost,
// none of the epoch's output is visible to read_committed consumers, so the epoch can be replayed
// exactly: restore the newest committed checkpoint before n and reprocess from its source offsets (the
// engine is deterministic, so it writes the same output again, in new transactions). When only SOME
// are lost, replay would duplicate the committed part and going on would lose the rest: the job
// refuses to start, naming the checkpoint, the transactional ids and what was committed and lost.
import { promises as fs } from "node:fs";
import path from "node:path";
import type { JsonValue } from "@keyflow/operators";
import { preparedTransactionSchema } from "../io/kafka/writer";
import type { ProducerIdentity } from "../io/kafka/transactions";
import type { Logger } from "../log";
import { readCheckpointFolder, type CheckpointStore, type StoredCheckpoint } from "./checkpoints";

/** Commits (or finds committed) the transaction `owner` recorded, or says the broker lost it (../io/kafka/transactions.ts recoverTransaction). */
export type TransactionProbe = (owner: string, transactionalId: string, identity: ProducerIdentity) => Promise<{ outcome: "committed" } | { outcome: "lost"; answer: string }>;

/** What recovery found for one output (a sink node or the dead-letter output) of the checkpoint. */
export type PendingOutcome =
  | { owner: string; kind: "none" }
  | { owner: string; kind: "kafka"; transactionalId: string; outcome: "committed" }
  | { owner: string; kind: "kafka"; transactionalId: string; outcome: "lost"; answer: string }
  /** A two-phase output that is not a Kafka transaction (sink.file): its commit state cannot be asked. */
  | { owner: string; kind: "other" };

export type EpochDecision = { action: "proceed" } | { action: "replay"; lost: string[] } | { action: "refuse"; message: string };

/** The owner name recovery gives the dead-letter output. */
export const DEAD_LETTERS = "the dead-letter output";

/**
 * The decision for checkpoint `checkpointId` from what became of its pending transactions: nothing
 * lost → proceed (the sinks finish its commit); everything lost and nothing else pending → replay;
 * otherwise refuse.
 */
export function decideEpoch(checkpointId: number, outcomes: readonly PendingOutcome[]): EpochDecision {
  const lost = outcomes.flatMap((o) => (o.kind === "kafka" && o.outcome === "lost" ? [o] : []));
  if (lost.length === 0) return { action: "proceed" };
  const committed = outcomes.flatMap((o) => (o.kind === "kafka" && o.outcome === "committed" ? [o] : []));
  const others = outcomes.filter((o) => o.kind === "other");
  const name = (o: { owner: string; transactionalId: string }) => `${o.owner} (transactional id "${o.transactionalId}")`;
  if (committed.length === 0 && others.length === 0) return { action: "replay", lost: lost.map(name) };
  const parts = [
    `lost (aborted by the broker, never visible): ${lost.map((o) => `${name(o)}: ${o.answer}`).join(", ")}`,
    ...(committed.length > 0 ? [`committed (visible to read_committed consumers): ${committed.map(name).join(", ")}`] : []),
    ...(others.length > 0 ? [`pending outputs whose commit cannot be checked: ${others.map((o) => o.owner).join(", ")}`] : []),
  ];
  return {
    action: "refuse",
    message:
      `checkpoint ${checkpointId} cannot be recovered exactly: its epoch's output is partly lost. ${parts.join("; ")}. ` +
      `Going on from checkpoint ${checkpointId} would lose the lost part, and replaying the epoch from the checkpoint before it would write the committed part twice. ` +
      `The job does not start by itself: an operator must choose (see "A checkpoint whose transactions were partly lost" in docs/ARCHITECTURE.md)`,
  };
}

/** Each output's pending handle in checkpoint `meta`, classified; Kafka transactions still to be probed. */
function pendingOf(meta: StoredCheckpoint["meta"]): Array<{ owner: string; handle: JsonValue | undefined }> {
  return [...Object.entries(meta.sinks).map(([nodeId, handle]) => ({ owner: `node "${nodeId}"`, handle })), { owner: DEAD_LETTERS, handle: meta.deadLetters }];
}

/** Probes every pending Kafka transaction of `meta`, one after the other (committing those still open). */
export async function probeEpoch(meta: StoredCheckpoint["meta"], probe: TransactionProbe): Promise<PendingOutcome[]> {
  const out: PendingOutcome[] = [];
  for (const { owner, handle } of pendingOf(meta)) {
    if (handle === undefined || handle === null) {
      out.push({ owner, kind: "none" });
      continue;
    }
    const tx = preparedTransactionSchema.safeParse(handle);
    if (!tx.success) {
      out.push({ owner, kind: "other" });
      continue;
    }
    // No transaction begun, or one recorded without its identity (the writer refuses it with its own error).
    if (!tx.data.open || tx.data.producerId === undefined || tx.data.producerEpoch === undefined) {
      out.push({ owner, kind: "none" });
      continue;
    }
    const r = await probe(owner, tx.data.transactionalId, { producerId: tx.data.producerId, producerEpoch: tx.data.producerEpoch });
    out.push(r.outcome === "committed" ? { owner, kind: "kafka", transactionalId: tx.data.transactionalId, outcome: "committed" } : { owner, kind: "kafka", transactionalId: tx.data.transactionalId, outcome: "lost", answer: r.answer });
  }
  return out;
}

/** The newest checkpoint older than `id` in `store` that carries `_committed`, if any. */
async function committedBefore(store: CheckpointStore, id: number): Promise<StoredCheckpoint | undefined> {
  for (let prev = id - 1; prev >= 1; prev--) {
    const dir = store.pathOf(prev);
    if (dir === undefined) return undefined;
    const complete = await fs.stat(path.join(dir, "_metadata.json")).then(() => true, () => false);
    if (!complete) continue;
    const c = await readCheckpointFolder(dir);
    // An older uncommitted one is an epoch an earlier recovery already found lost and replayed.
    if (c.committed) return c;
  }
  return undefined;
}

export interface RecoveredEpoch {
  /** The checkpoint to restore: `latest` itself, or the committed one before it (undefined: none, start anew). */
  restored: StoredCheckpoint | undefined;
  /** Set when the epoch after `restored` is replayed because every transaction of `latest` was lost. */
  replayed?: { lostCheckpoint: number; lost: string[] };
}

/**
 * Recovery of `latest`, the newest checkpoint of the job's own folder. A committed one, or one with no
 * lost transaction, is restored as it is (the sinks finish its commit again, which changes nothing for
 * what is already committed); one whose transactions are all lost gives way to the newest committed
 * checkpoint before it (none: the job starts anew, as no output of it was ever committed); a mixed
 * one throws. `probe` undefined: the job has no Kafka outputs to ask.
 */
export async function recoverEpoch(latest: StoredCheckpoint, store: CheckpointStore, probe: TransactionProbe | undefined, log: Logger): Promise<RecoveredEpoch> {
  if (latest.committed || probe === undefined) return { restored: latest };
  const id = latest.meta.id;
  const outcomes = await probeEpoch(latest.meta, probe);
  const decision = decideEpoch(id, outcomes);
  if (decision.action === "proceed") return { restored: latest };
  if (decision.action === "refuse") throw new Error(decision.message);
  const previous = await committedBefore(store, id);
  log.warn(
    `checkpoint ${id} was written but never committed, and the broker aborted every transaction it lists (${decision.lost.join(", ")}): ` +
      `none of its epoch's output is visible, so the epoch is replayed from ${previous ? `checkpoint ${previous.meta.id}` : "the start (no earlier committed checkpoint)"}`,
  );
  return { restored: previous, replayed: { lostCheckpoint: id, lost: decision.lost } };
}
