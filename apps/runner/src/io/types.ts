// The small interfaces between I/O and the job driver. File, Kafka and demo connectors implement
// them; the driver (../job/driver.ts) knows nothing of kafkajs or fs.
//
// Vocabulary:
// - a *position* is a source's resumable place (file line, Kafka offsets per partition) as JSON,
//   stored in each checkpoint and handed back to `open` on restore;
// - a sink *epoch* is the output between two checkpoints; `prepareCommit` stages it (phase 1),
//   `commit` makes it visible once the checkpoint is durable (phase 2).
import type { JobEmission, JsonObject, JsonValue, SourceOrigin } from "@keyflow/operators";

/** A record as read: raw text or bytes to parse (files, Kafka), or a ready value (demo). */
export type SourceRecord =
  | { kind: "raw"; raw: string | Uint8Array; origin: SourceOrigin }
  | { kind: "value"; value: JsonValue; origin: SourceOrigin };

export interface SourceBatch {
  records: readonly SourceRecord[];
  /** The source's position after these records. */
  position: JsonValue;
  /** Partitions that will send nothing more for now (e.g. a bounded partition that reached its end). */
  idlePartitions?: readonly number[];
}

/** Hands a batch to the job; resolves once the job has taken it (this is the backpressure). */
export type EmitBatch = (batch: SourceBatch) => Promise<void>;

export interface RecordSource {
  readonly nodeId: string;
  /** Ends by itself (files, bounded Kafka) rather than running until stopped. */
  readonly bounded: boolean;
  /** A partition silent this long (processing time) is marked idle; undefined: never. */
  readonly idleTimeoutMs: number | undefined;
  /**
   * Prepares to read from `restored` (a position from a checkpoint) or, without one, from where the
   * params say. Returns the starting position (stored in the first checkpoint).
   */
  open(restored: JsonValue | undefined): Promise<JsonValue>;
  /**
   * Reads until the end of a bounded input (then resolves) or until `signal` aborts. Rejects on a
   * failure the job cannot continue from.
   */
  run(emit: EmitBatch, signal: AbortSignal): Promise<void>;
  /** A checkpoint holding `position` is durable (the Kafka source commits its group offsets here). */
  checkpointCompleted?(position: JsonValue): Promise<void>;
  /** Input-side figures, e.g. Kafka consumer lag per partition. */
  inputMetrics?(): SourceInputMetrics;
  close(): Promise<void>;
}

export interface SourceInputMetrics {
  /** Kafka topic, or file path. */
  input: string;
  /** Records behind the end of the input, per partition, as last seen. */
  lag: Record<string, number>;
}

/** What a sink receives: the engine's sink emission without its routing fields. */
export interface SinkRecord {
  value: JsonObject;
  /** `JSON.stringify(value)` when it was serialized already (SerializedSinkRecord): the sinks write it as is. */
  readonly json?: string;
  timestamp: number;
  key?: string;
  /** Kafka message headers (a rule job's version tag); other sinks ignore them. */
  headers?: Record<string, string>;
}

/**
 * A record that crossed from a keyed subtask as its JSON text (../exec/wire.ts, SINK_JSON): the
 * subtask serializes its sink values, since both sinks write JSON and the sink task's thread sets a
 * parallel job's rate; the value is parsed only when something reads it (a tap, a rule job's routing).
 */
export class SerializedSinkRecord implements SinkRecord {
  private parsed: JsonObject | undefined;
  constructor(
    readonly json: string,
    readonly timestamp: number,
    readonly key?: string,
  ) {}
  get value(): JsonObject {
    return (this.parsed ??= JSON.parse(this.json) as JsonObject);
  }
  /** Serialized whole (a log, an HTTP answer), it reads as the plain record it stands for. */
  toJSON(): SinkRecord {
    return this.key === undefined ? { value: this.value, timestamp: this.timestamp } : { value: this.value, timestamp: this.timestamp, key: this.key };
  }
}

export type DeadLetter = Extract<JobEmission, { kind: "deadLetter" }>;

/** An output that commits in two phases with the job's checkpoints. */
export interface CommittingWriter<T> {
  /** Where the output goes, for summaries and logs (`out/alerts.jsonl`, `kafka:alerts`). */
  readonly target: string;
  /**
   * `restored` is what prepareCommit returned for the checkpoint being restored: finish its commit
   * or undo what came after it. `restoredCommitted` says whether that checkpoint was marked committed
   * (false: the previous run died between writing it and committing every sink).
   */
  open(restored: JsonValue | undefined, restoredCommitted?: boolean): Promise<void>;
  /** Accepts records of the current epoch; may buffer. Resolving is the backpressure. */
  write(records: readonly T[]): Promise<void>;
  /** Phase 1: everything written so far is durable but not yet visible; returns what commit needs. */
  prepareCommit(checkpointId: number): Promise<JsonValue>;
  /** Phase 2: the checkpoint holding `prepared` is durable; make the epoch visible. Idempotent. */
  commit(checkpointId: number, prepared: JsonValue): Promise<void>;
  /**
   * True when phase 2 does nothing for this writer (at-least-once Kafka: every send acknowledged
   * at phase 1 is already visible), so the next epoch's records may be written while the
   * checkpoint is still being made durable. The driver then goes on processing records as soon as
   * the sinks are flushed instead of after the folder's fsync and marker (see JobDriver.loop).
   */
  readonly writesBeforeCommit?: boolean;
  close(): Promise<void>;
}

export interface RecordSink extends CommittingWriter<SinkRecord> {
  readonly nodeId: string;
}

export type DeadLetterSink = CommittingWriter<DeadLetter>;
