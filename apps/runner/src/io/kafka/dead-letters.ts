// The dead-letter topic (`<pipeline>.dlq`): the original bytes as the value, and headers in the
// style of Kafka Connect's DLQ (`__connect.errors.*`) plus Keyflow's own (`keyflow.*`), so the
// usual tooling can show where each record came from and why it was refused.
import type { IHeaders, Message } from "kafkajs";
import type { JsonValue } from "@keyflow/operators";
import { rawBytes } from "../dead-letter-format";
import type { DeadLetter, DeadLetterSink } from "../types";
import type { KafkaWriter } from "./writer";

export const DLQ_HEADERS = {
  topic: "__connect.errors.topic",
  partition: "__connect.errors.partition",
  offset: "__connect.errors.offset",
  exceptionClass: "__connect.errors.exception.class.name",
  exceptionMessage: "__connect.errors.exception.message",
  node: "keyflow.node",
  port: "keyflow.port",
  reason: "keyflow.reason",
  sourceNode: "keyflow.source.node",
  sourcePath: "keyflow.source.path",
  sourceLine: "keyflow.source.line",
} as const;

export function deadLetterMessage(d: DeadLetter): Message {
  const headers: IHeaders = {
    [DLQ_HEADERS.exceptionClass]: "keyflow.DeadLetter",
    [DLQ_HEADERS.exceptionMessage]: d.reason,
    [DLQ_HEADERS.node]: d.nodeId,
    [DLQ_HEADERS.reason]: d.reason,
  };
  if (d.port !== undefined) headers[DLQ_HEADERS.port] = d.port;
  const o = d.origin;
  if (o) {
    headers[DLQ_HEADERS.sourceNode] = o.sourceNodeId;
    if (o.topic !== undefined) headers[DLQ_HEADERS.topic] = o.topic;
    headers[DLQ_HEADERS.partition] = String(o.partition);
    if (o.offset !== undefined) headers[DLQ_HEADERS.offset] = o.offset;
    if (o.path !== undefined) headers[DLQ_HEADERS.sourcePath] = o.path;
    if (o.line !== undefined) headers[DLQ_HEADERS.sourceLine] = String(o.line);
  }
  return { key: null, value: rawBytes(d), headers };
}

export class KafkaDeadLetterSink implements DeadLetterSink {
  constructor(private readonly writer: KafkaWriter) {}

  get target(): string {
    return this.writer.target;
  }
  get writesBeforeCommit(): boolean {
    return this.writer.writesBeforeCommit;
  }
  open(restored: JsonValue | undefined, restoredCommitted?: boolean): Promise<void> {
    return this.writer.open(restored, restoredCommitted);
  }
  write(letters: readonly DeadLetter[]): Promise<void> {
    return this.writer.send(letters.map(deadLetterMessage));
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
