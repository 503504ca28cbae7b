// source.kafka: reads JSON records from a Kafka topic. Only the spec lives here; the runner owns
// the consumer (kafkajs), offsets and partition assignment, and pushes raw bytes into the job.
import { z } from "zod";
import { defineOperator } from "../../core/spec";
import { declaredFieldsParam, idleTimeoutParam, maxOutOfOrdernessParam, sourceOutputs, timestampFieldParam } from "../event-time";

/** Offsets per partition ("0": 1200), as Kafka tools print them; numbers or digit strings. */
const partitionOffsets = z
  .record(z.string().regex(/^\d+$/, { error: "partition numbers are non-negative integers" }), z.union([z.number().int().min(0), z.string().regex(/^\d+$/)]).transform(Number))
  .refine((m) => Object.keys(m).length > 0, { error: "name at least one partition" });
/** Epoch ms, or an ISO-8601 instant. */
const instant = z.union([
  z.number().int().min(0),
  // Digits typed into the canvas's text input arrive as a string.
  z.string().regex(/^\d+$/).transform(Number),
  z.iso.datetime({ offset: true }).transform((s) => Date.parse(s)),
]);

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
    .describe("Read each partition up to the end offsets seen when the job first starts (or up to endOffsets / endTime), then end (event time jumps to +∞ and every window fires): the way to backtest on a topic range"),
  startOffsets: partitionOffsets
    .optional()
    .describe("First offset to read per partition (a backtest range); partitions not named start per startFrom. Without a checkpoint only: a restore resumes at the checkpoint"),
  startTime: instant
    .optional()
    .describe("Start each partition at its first record with a Kafka timestamp at or after this instant (epoch ms or ISO-8601); resolved with the broker's offsets-for-times lookup"),
  endOffsets: partitionOffsets
    .optional()
    .describe("Bounded reads: first offset NOT to read per partition; partitions not named stop at the end offset seen at the first start"),
  endTime: instant
    .optional()
    .describe("Bounded reads: stop each partition before its first record with a Kafka timestamp at or after this instant (epoch ms or ISO-8601)"),
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
so a backtest over a topic range finishes and fires every window. A range is given by offsets
(\`startOffsets\`, \`endOffsets\`, per partition, the end exclusive) or by Kafka message timestamps
(\`startTime\`, \`endTime\`, resolved per partition by the broker at the first start and kept in the
checkpoint, so a restored backtest reads the same range).

**Exactly-once.** Offsets are part of each checkpoint; a restored job rewinds to them.`,
  params: sourceKafkaParams,
  inputs: [],
  outputs: sourceOutputs,
  requiresKeyedInput: false,
  stateful: false,
  outputFields: (params) => params.fields,
  check: (params) => {
    const issues: { severity: "error"; param: string; message: string }[] = [];
    if (params.startOffsets && params.startTime !== undefined) issues.push({ severity: "error", param: "startTime", message: "give startOffsets or startTime, not both" });
    if (params.endOffsets && params.endTime !== undefined) issues.push({ severity: "error", param: "endTime", message: "give endOffsets or endTime, not both" });
    if ((params.endOffsets || params.endTime !== undefined) && !params.bounded) {
      issues.push({ severity: "error", param: params.endOffsets ? "endOffsets" : "endTime", message: "an end of the range needs bounded: true (an unbounded source never stops)" });
    }
    if (params.startTime !== undefined && params.endTime !== undefined && params.endTime <= params.startTime) issues.push({ severity: "error", param: "endTime", message: "must be after startTime" });
    for (const [p, end] of Object.entries(params.endOffsets ?? {})) {
      const start = params.startOffsets?.[p];
      if (start !== undefined && end < start) issues.push({ severity: "error", param: `endOffsets.${p}`, message: `partition ${p} ends at ${end}, before its start offset ${start}` });
    }
    return issues;
  },
});
