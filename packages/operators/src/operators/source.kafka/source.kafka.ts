// source.kafka: reads JSON records from a Kafka topic. Only the spec lives here; the runner owns
// the consumer (kafkajs), offsets and partition assignment, and pushes raw bytes into the job.
import { z } from "zod";
import { defineOperator } from "../../core/spec";
import { declaredFieldsParam, idleTimeoutParam, maxOutOfOrdernessParam, sourceOutputs, timestampFieldParam } from "../event-time";

export const sourceKafkaParams = z.strictObject({
  topic: z.string().min(1, { error: "must name a Kafka topic, e.g. \"payments\"" }).describe("Kafka topic to consume"),
  brokers: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe("Bootstrap brokers as host:port; unset: the runner's KAFKA_BROKERS environment variable"),
  startFrom: z
    .enum(["earliest", "latest", "committed"])
    .default("earliest")
    .describe("Where a job without a checkpoint starts: the earliest offset, the latest (only new records), or the consumer group's committed offsets. A job restored from a checkpoint always resumes at the checkpoint's offsets"),
  bounded: z
    .boolean()
    .default(false)
    .describe("Read each partition up to the end offsets seen when the job first starts, then end (event time jumps to +∞ and every window fires): the way to backtest on a topic range"),
  timestampField: timestampFieldParam(),
  maxOutOfOrdernessMs: maxOutOfOrdernessParam(),
  idleTimeoutMs: idleTimeoutParam(),
  format: z.literal("json").default("json").describe("Record encoding: one JSON object per Kafka message value"),
  fields: declaredFieldsParam(),
});
export type SourceKafkaParams = z.infer<typeof sourceKafkaParams>;

export const sourceKafkaSpec = defineOperator({
  type: "source.kafka",
  version: 1,
  category: "source",
  title: "Kafka source",
  summary: "Consume JSON records from a Kafka topic, with event-time watermarks per partition",
  docs: `Consumes one Kafka topic. Each message value is a JSON object; its event time is read from
\`timestampField\` (epoch ms or ISO-8601).

**Watermarks.** Per partition, \`max event time seen − maxOutOfOrdernessMs − 1\`; the source's watermark is
the minimum over partitions that are not idle. A partition silent for \`idleTimeoutMs\` is marked idle so it
does not stall every window downstream (the classic "one empty partition freezes event time" pitfall).

**Dead letters.** A message that is not JSON, is not an object, or lacks its timestamp goes to the
pipeline's dead-letter topic (\`<pipeline>.dlq\`) with the reason and its topic, partition and offset;
the job keeps running.

**Bounded reads.** With \`bounded: true\` the source stops at the end offsets seen at the job's first start,
so a backtest over a topic range finishes and fires every window.

**Exactly-once.** Offsets are part of each checkpoint; a restored job rewinds to them.`,
  params: sourceKafkaParams,
  inputs: [],
  outputs: sourceOutputs,
  requiresKeyedInput: false,
  stateful: false,
  outputFields: (params) => params.fields,
});
