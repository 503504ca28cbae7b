// sink.kafka: writes records to a Kafka topic. Only the spec lives here; the runner owns the
// producer and, for exactly-once, the transactions committed with each checkpoint.
import { z } from "zod";
import { defineOperator } from "../../core/spec";

export const sinkKafkaParams = z.strictObject({
  topic: z.string().min(1, { error: "must name a Kafka topic, e.g. \"alerts\"" }).describe("Kafka topic to write to"),
  deliveryGuarantee: z
    .enum(["exactly-once", "at-least-once"])
    .default("exactly-once")
    .describe("exactly-once: records are written in Kafka transactions committed with each checkpoint (readers with read_committed see them once, after up to one checkpoint interval); at-least-once: written immediately, possibly again after a restore"),
});
export type SinkKafkaParams = z.infer<typeof sinkKafkaParams>;

export const sinkKafkaSpec = defineOperator({
  type: "sink.kafka",
  version: 1,
  category: "sink",
  title: "Kafka sink",
  summary: "Write each record as a JSON message to a Kafka topic",
  docs: `Writes each incoming record as one JSON message value. The message key is the record's key when the
input is keyed (so one card's alerts stay ordered in one partition), otherwise none.

**Delivery.** \`exactly-once\` (the default) writes inside a Kafka transaction that commits when the checkpoint
completes: consumers reading with \`isolation.level=read_committed\` see each record once, but only after the
checkpoint, so latency is up to \`checkpointIntervalMs\`. \`at-least-once\` writes immediately; after a failure the
records since the last checkpoint may be written again, so consumers must deduplicate (e.g. on an alert id).

**Timestamps and retention.** Each message's Kafka timestamp is its record's event time (as in Kafka Streams),
which comparisons by time range rely on. The broker's time retention (\`retention.ms\`) counts from that
timestamp, not from when the message was written: a topic that receives a replay of events older than its
retention loses that output at the broker's next retention check (every 5 minutes by default). Give such a
topic a retention that covers the replayed period, or retention by size only (\`retention.ms=-1\`).`,
  params: sinkKafkaParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], multiple: true, required: true }],
  outputs: [],
  requiresKeyedInput: false,
  stateful: false,
  writes: { param: "topic", kind: "topic" },
});
