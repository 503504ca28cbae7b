// The sample of a dry run taken from Kafka: the last N records of a topic. Each partition is read
// from `high − N` to the end offset seen now with the runner's own bounded Kafka source (started at
// that position as if restored from a checkpoint), so nothing is committed and no group is left
// behind; then the newest N across partitions, by event time, in event-time order.
import { randomBytes } from "node:crypto";
import type { JsonValue } from "@keyflow/operators";
import { KafkaClients, resolveBrokers } from "../io/kafka/client";
import { KafkaSource } from "../io/kafka/source";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import type { DryRunInput } from "./dry-run";
import { eventTimeOf } from "@keyflow/operators";

export interface LastRecordsRequest {
  sourceNodeId: string;
  topic: string;
  lastN: number;
  /** The source's `brokers` param; else the runner's KAFKA_BROKERS. */
  brokers: readonly string[] | undefined;
  defaultBrokers: readonly string[] | undefined;
  timestampField: string;
  timeoutMs?: number;
  log: Logger;
}

export async function readLastRecords(r: LastRecordsRequest): Promise<{ input: DryRunInput; warnings: string[] }> {
  const brokers = resolveBrokers(r.sourceNodeId, r.brokers, r.defaultBrokers);
  const clients = new KafkaClients(r.log, "keyflow-dry-run");
  const warnings: string[] = [];
  const kafka = clients.kafka(brokers);
  const admin = () => clients.admin(brokers);
  const source = new KafkaSource({
    nodeId: r.sourceNodeId,
    kafka,
    admin,
    topic: r.topic,
    groupId: `keyflow.dry-run.${randomBytes(4).toString("hex")}`,
    startFrom: "earliest",
    bounded: true,
    idleTimeoutMs: undefined,
    log: r.log,
  });
  const collected: { raw: string; partition: number; offset: string; ts: number }[] = [];
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timeout")), r.timeoutMs ?? 20_000);
  try {
    const a = await admin();
    const topics = await a.listTopics();
    if (!topics.includes(r.topic)) throw new Error(`node "${r.sourceNodeId}": Kafka topic "${r.topic}" does not exist`);
    const offsets = await a.fetchTopicOffsets(r.topic);
    const next: Record<string, string> = {};
    const end: Record<string, string> = {};
    for (const { partition, low, high } of offsets) {
      next[String(partition)] = String(Math.max(Number(low), Number(high) - r.lastN));
      end[String(partition)] = high;
    }
    const position: JsonValue = { topic: r.topic, next, end };
    await source.open(position);
    const decoder = new TextDecoder();
    await source.run(async (batch) => {
      for (const rec of batch.records) {
        if (rec.kind !== "raw") continue;
        const raw = typeof rec.raw === "string" ? rec.raw : decoder.decode(rec.raw);
        let ts = Number.NEGATIVE_INFINITY;
        try {
          const parsed = JSON.parse(raw) as unknown;
          if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
            const t = eventTimeOf((parsed as Record<string, JsonValue>)[r.timestampField]);
            if (typeof t === "number") ts = t;
          }
        } catch {
          // unparseable: kept, so the dry run shows it as a dead letter
        }
        collected.push({ raw, partition: rec.origin.partition, offset: rec.origin.offset ?? "", ts });
      }
    }, abort.signal);
    if (abort.signal.aborted) warnings.push(`reading the last ${r.lastN} records of "${r.topic}" timed out; the dry run uses the ${collected.length} read so far`);
  } catch (err) {
    throw new Error(`cannot read the last ${r.lastN} records of Kafka topic "${r.topic}": ${errorMessage(err)}`);
  } finally {
    clearTimeout(timer);
    await source.close().catch(() => {});
    await clients.close();
  }
  // The newest N by event time (ties: partition, offset), replayed oldest first.
  collected.sort((x, y) => x.ts - y.ts || x.partition - y.partition || Number(x.offset) - Number(y.offset));
  const kept = collected.slice(Math.max(0, collected.length - r.lastN));
  return {
    input: {
      sourceNodeId: r.sourceNodeId,
      label: `kafka:${r.topic}`,
      lines: kept.map((k) => k.raw),
      origins: kept.map((k) => ({ partition: k.partition, offset: k.offset, topic: r.topic })),
    },
    warnings,
  };
}
