// Which connector serves which node type: the one place that maps source.*/sink.* nodes to their
// RecordSource/RecordSink, and picks the dead-letter output (the `<name>.dlq` topic when the
// pipeline uses Kafka, else `<name>.dlq.jsonl` beside the file sinks).
import { deadLetterOutput, type PipelineDocument } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import type { Clock } from "../job/clock";
import type { Connectors, JobIoNode } from "../job/driver";
import type { Logger } from "../log";
import { confinePath } from "./confine";
import { DemoSource } from "./demo";
import { FileDeadLetterSink, FileSink } from "./file/sink";
import { FileSource } from "./file/source";
import { KafkaClients, resolveBrokers } from "./kafka/client";
import { KafkaDeadLetterSink } from "./kafka/dead-letters";
import { KafkaSink } from "./kafka/sink";
import { KafkaSource } from "./kafka/source";
import { recoverTransaction, type ProducerIdentity } from "./kafka/transactions";
import { KafkaWriter } from "./kafka/writer";
import { ioParams } from "./params";
import type { DeadLetterSink, RecordSink, RecordSource } from "./types";

export interface ConnectorContext {
  doc: PipelineDocument;
  /** Names consumer groups and transactional ids: stable across restarts of the same job. */
  jobId: string;
  /** Relative file paths resolve against this folder (the data folder; the pipeline file's folder for the CLI). */
  baseDir: string;
  /** The folder every file read or written must be in (realpath, symlinks included); default baseDir (`keyflow run --allow-paths DIR`: DIR). */
  fileRoot?: string;
  env: RunnerEnv;
  clock: Clock;
  log: Logger;
  /** Demo sources stop after this many payments (tests). */
  demoLimit?: number;
}

export function usesKafka(doc: PipelineDocument): boolean {
  return doc.nodes.some((n) => n.type === "source.kafka" || n.type === "sink.kafka");
}

/** Kafka transactional ids and group ids allow these characters. */
const safeId = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, "_");

export function createConnectors(ctx: ConnectorContext): Connectors {
  const { doc, env, log } = ctx;
  const clients = new KafkaClients(log);
  // Nodes without a `brokers` param (sinks, dead letters) use KAFKA_BROKERS, else a Kafka source's brokers.
  const sourceWithBrokers = doc.nodes.find((n) => n.type === "source.kafka" && Array.isArray(n.params.brokers));
  const defaultBrokers = env.kafkaBrokers ?? (sourceWithBrokers ? ioParams("source.kafka", sourceWithBrokers.id, sourceWithBrokers.params).brokers : undefined);
  const kafkaFor = (nodeId: string, brokers: readonly string[] | undefined) => {
    const b = resolveBrokers(nodeId, brokers, defaultBrokers);
    return { kafka: clients.kafka(b), admin: () => clients.admin(b) };
  };
  // Checked again at every start of the job: a symlink placed after the deploy is caught too.
  const fileRoot = ctx.fileRoot ?? ctx.baseDir;
  const resolvePath = (what: string, p: string) => confinePath(p, what, { root: fileRoot, base: ctx.baseDir, folder: ctx.fileRoot === undefined ? "data folder" : `allowed folder ${fileRoot}` });
  const txTimeout = Math.min(900_000, Math.max(60_000, 2 * doc.settings.checkpointIntervalMs + 60_000));

  return {
    source(node: JobIoNode): RecordSource {
      const nodeLog = log.child(node.nodeId);
      switch (node.type) {
        case "source.file": {
          const p = ioParams("source.file", node.nodeId, node.params);
          return new FileSource({ nodeId: node.nodeId, file: resolvePath(`node "${node.nodeId}": param "path"`, p.path), displayPath: p.path, idleTimeoutMs: p.idleTimeoutMs });
        }
        case "source.kafka": {
          const p = ioParams("source.kafka", node.nodeId, node.params);
          return new KafkaSource({
            nodeId: node.nodeId,
            ...kafkaFor(node.nodeId, p.brokers),
            topic: p.topic,
            groupId: safeId(`keyflow.${ctx.jobId}.${node.nodeId}`),
            startFrom: p.startFrom,
            bounded: p.bounded,
            startOffsets: p.startOffsets,
            startTime: p.startTime,
            endOffsets: p.endOffsets,
            endTime: p.endTime,
            idleTimeoutMs: p.idleTimeoutMs,
            log: nodeLog,
          });
        }
        case "source.demo": {
          const p = ioParams("source.demo", node.nodeId, node.params);
          return new DemoSource({ nodeId: node.nodeId, params: p, clock: ctx.clock, ...(ctx.demoLimit !== undefined ? { limit: ctx.demoLimit } : {}) });
        }
        default:
          throw new Error(`node "${node.nodeId}": the runner has no connector for source type "${node.type}"`);
      }
    },

    sink(node: JobIoNode): RecordSink {
      const nodeLog = log.child(node.nodeId);
      switch (node.type) {
        case "sink.file": {
          const p = ioParams("sink.file", node.nodeId, node.params);
          return new FileSink(node.nodeId, resolvePath(`node "${node.nodeId}": param "path"`, p.path), p.path, nodeLog);
        }
        case "sink.kafka": {
          const p = ioParams("sink.kafka", node.nodeId, node.params);
          const writer = new KafkaWriter({
            ...kafkaFor(node.nodeId, undefined),
            topic: p.topic,
            guarantee: p.deliveryGuarantee,
            // Per job, sink node and sink subtask (one sink task today); the writer appends `.0`/`.1`.
            transactionalId: safeId(`keyflow.${ctx.jobId}.${node.nodeId}.0`),
            transactionTimeoutMs: txTimeout,
            what: `node "${node.nodeId}"`,
            log: nodeLog,
          });
          return new KafkaSink(node.nodeId, writer);
        }
        default:
          throw new Error(`node "${node.nodeId}": the runner has no connector for sink type "${node.type}"`);
      }
    },

    deadLetters(): DeadLetterSink {
      const dlqLog = log.child("dead-letters");
      const output = deadLetterOutput(doc);
      if (output.kind === "topic") {
        // Dead letters follow the pipeline's promise: when any Kafka sink is exactly-once, each refused
        // record must reach the dead-letter topic once across restarts too, so they share its 2PC.
        const exactlyOnce = doc.nodes.some((n) => n.type === "sink.kafka" && ioParams("sink.kafka", n.id, n.params).deliveryGuarantee === "exactly-once");
        const writer = new KafkaWriter({
          ...kafkaFor("dead-letters", undefined),
          topic: output.topic,
          guarantee: exactlyOnce ? "exactly-once" : "at-least-once",
          ...(exactlyOnce ? { transactionalId: safeId(`keyflow.${ctx.jobId}.dead-letters.0`), transactionTimeoutMs: txTimeout } : {}),
          what: "the dead-letter output",
          log: dlqLog,
        });
        return new KafkaDeadLetterSink(writer);
      }
      return new FileDeadLetterSink(resolvePath("the dead-letter file", output.path), output.path, dlqLog);
    },

    close: () => clients.close(),

    // Exactly-once outputs write through the default brokers (sinks and dead letters alike).
    ...(usesKafka(doc) ? { recoverTransaction: (owner: string, transactionalId: string, identity: ProducerIdentity) => recoverTransaction(kafkaFor(owner, undefined).kafka, transactionalId, identity) } : {}),
  };
}
