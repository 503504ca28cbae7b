// sink.kafka: each record as one JSON message value; the record's key (keyed streams) as the
// message key, its event time as the message timestamp. Delivery semantics: ./writer.ts.
import type { JsonValue } from "@keyflow/operators";
import type { Message } from "kafkajs";
import type { RecordSink, SinkRecord } from "../types";
import type { KafkaWriter } from "./writer";

export class KafkaSink implements RecordSink {
  constructor(
    readonly nodeId: string,
    private readonly writer: KafkaWriter,
  ) {}

  get target(): string {
    return this.writer.target;
  }

  open(restored: JsonValue | undefined, restoredCommitted?: boolean): Promise<void> {
    return this.writer.open(restored, restoredCommitted);
  }

  write(records: readonly SinkRecord[]): Promise<void> {
    const messages = records.map(
      (r): Message => ({
        key: r.key ?? null,
        value: r.json ?? JSON.stringify(r.value),
        ...(Number.isFinite(r.timestamp) ? { timestamp: String(Math.trunc(r.timestamp)) } : {}),
        ...(r.headers ? { headers: r.headers } : {}),
      }),
    );
    return this.writer.send(messages);
  }

  get writesBeforeCommit(): boolean {
    return this.writer.writesBeforeCommit;
  }

  prepareCommit(_checkpointId: number): Promise<JsonValue> {
    return this.writer.prepareCommit();
  }

  commit(_checkpointId: number, _prepared: JsonValue): Promise<void> {
    return this.writer.commit();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
