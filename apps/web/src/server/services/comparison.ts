// The comparison an approver reads before a promotion: a rule's shadow version against its
// enforcing version over the same events. Picks the versions (the newest shadow and enforcing
// deployments unless told), the topics each writes (deployment-mode.ts), reads them to their
// current end (comparison-kafka.ts) and matches the alerts (comparison-stats.ts). With a label
// field, the input topic is read too, so that recall has a denominator.
import { TRPCError } from "@trpc/server";
import type { DeploymentMode, PrismaClient } from "@keyflow/db";
import type { PipelineDocument } from "@keyflow/operators";
import { notFound } from "../errors";
import { fromJsonColumn } from "../json";
import { alertTopics } from "./deployment-mode";
import { kafkaClient, readTopicToEnd, type TopicRead } from "./comparison-kafka";
import { compareAlerts, labelOf, parseAlert, type ComparisonStats, type ReadAlert, type UnreadableAlert } from "./comparison-stats";

/** Per topic read; beyond it the read stops and the answer says it was truncated. */
const MAX_MESSAGES = 500_000;

export interface ComparisonInput {
  pipelineId: string;
  /** The challenger, read from its shadow topic; default: the newest shadow deployment's version. */
  newVersionId?: string | undefined;
  /** The incumbent, read from its enforcement topic; default: the newest enforcing deployment's version (another one). */
  oldVersionId?: string | undefined;
  /** Label field in the records (e.g. isFraud); null: no precision and recall. */
  labelField: string | null;
  /**
   * Event-time bounds; default: none, both topics whole. (A default such as "the span both versions'
   * alerts cover" would hide the new version's alerts after the old one's last alert.)
   */
  range?: { fromTs: number | null; toTs: number | null } | undefined;
  samples: number;
}

interface Side {
  versionId: string;
  number: number;
  mode: DeploymentMode;
  topics: string[];
  idField: string;
  graph: PipelineDocument;
}

export interface Comparison {
  pipelineId: string;
  new: Omit<Side, "graph">;
  old: Omit<Side, "graph">;
  stats: ComparisonStats;
  unreadable: { count: number; first: UnreadableAlert[] };
  /** Topics that do not exist yet (the version has written nothing), and reads cut at MAX_MESSAGES. */
  missingTopics: string[];
  truncatedTopics: string[];
  inputTopics: string[];
}

/** The record id field the rule cites in its evidence: the first `idField` param of its nodes, else "id". */
export function idFieldOf(graph: PipelineDocument): string {
  for (const node of graph.nodes) {
    const value = (node.params as Record<string, unknown>).idField;
    if (typeof value === "string" && value.length > 0) return value;
  }
  return "id";
}

async function side(prisma: PrismaClient, pipelineId: string, versionId: string | undefined, mode: DeploymentMode, exceptVersion: string | null): Promise<Side> {
  let id = versionId;
  if (id === undefined) {
    const deployment = await prisma.deployment.findFirst({
      where: { pipelineId, mode, status: { not: "failed" }, ...(exceptVersion ? { versionId: { not: exceptVersion } } : {}) },
      orderBy: { createdAt: "desc" },
      select: { versionId: true },
    });
    if (!deployment) {
      throw new TRPCError({ code: "PRECONDITION_FAILED", message: mode === "shadow" ? "nothing of this rule has been deployed in shadow: deploy the new version in shadow first" : "no other version of this rule has been enforcing: there is nothing to compare the shadow version with" });
    }
    id = deployment.versionId;
  }
  const version = await prisma.pipelineVersion.findFirst({ where: { id, pipelineId }, select: { id: true, number: true, graph: true, pipeline: { select: { name: true } } } });
  if (!version) throw notFound("version", id);
  const graph = fromJsonColumn(version.graph, `version ${version.number} of ${version.pipeline.name}`);
  const topics = alertTopics(graph, mode).map((t) => t.topic);
  if (topics.length === 0) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `version ${version.number} has no Kafka sink: its alerts cannot be read back for a comparison` });
  return { versionId: version.id, number: version.number, mode, topics, idField: idFieldOf(graph), graph };
}

function toAlerts(reads: readonly TopicRead[], unreadable: UnreadableAlert[]): ReadAlert[] {
  const alerts: ReadAlert[] = [];
  for (const read of reads) {
    for (const m of read.messages) {
      const parsed = parseAlert(m.value);
      if (parsed.ok) alerts.push({ topic: m.topic, partition: m.partition, offset: m.offset, timestamp: m.timestamp, key: m.key, value: parsed.value });
      else unreadable.push({ topic: m.topic, partition: m.partition, offset: m.offset, reason: parsed.reason });
    }
  }
  return alerts;
}

export async function compareVersions(prisma: PrismaClient, brokers: readonly string[] | undefined, input: ComparisonInput): Promise<Comparison> {
  if (!brokers || brokers.length === 0) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "KAFKA_BROKERS is not set for the web app: it cannot read the alert topics to compare them" });
  const newSide = await side(prisma, input.pipelineId, input.newVersionId, "shadow", null);
  const oldSide = await side(prisma, input.pipelineId, input.oldVersionId, "enforcing", newSide.versionId);
  const kafka = kafkaClient(brokers);
  const newReads = await Promise.all(newSide.topics.map((t) => readTopicToEnd(kafka, t, MAX_MESSAGES)));
  const oldReads = await Promise.all(oldSide.topics.map((t) => readTopicToEnd(kafka, t, MAX_MESSAGES)));
  const unreadable: UnreadableAlert[] = [];
  const newAlerts = toAlerts(newReads, unreadable);
  const oldAlerts = toAlerts(oldReads, unreadable);

  // Recall needs the fraud in the input: the new version's Kafka sources, read the same way.
  const inputTopics = newSide.graph.nodes.filter((n) => n.type === "source.kafka").map((n) => String((n.params as { topic?: unknown }).topic));
  let fraudIds: Set<string> | null = null;
  const inputReads: TopicRead[] = [];
  if (input.labelField !== null && inputTopics.length > 0) {
    let labelled = 0;
    const ids = new Set<string>();
    for (const topic of inputTopics) {
      const read = await readTopicToEnd(kafka, topic, MAX_MESSAGES);
      inputReads.push(read);
      for (const m of read.messages) {
        const parsed = parseAlert(m.value);
        if (!parsed.ok) continue; // a record the rule itself sends to dead letters: no verdict either way
        const label = labelOf(parsed.value, input.labelField);
        if (label === null) continue;
        labelled++;
        const id = parsed.value[newSide.idField];
        if (label && (typeof id === "string" || typeof id === "number")) ids.add(String(id));
      }
    }
    fraudIds = labelled > 0 ? ids : null;
  }

  const stats = compareAlerts(newAlerts, oldAlerts, {
    idField: newSide.idField,
    range: input.range ?? { fromTs: null, toTs: null },
    samples: input.samples,
    labelField: input.labelField,
    fraudIds,
  });
  const all = [...newReads, ...oldReads, ...inputReads];
  const { graph: _n, ...newOut } = newSide;
  const { graph: _o, ...oldOut } = oldSide;
  return {
    pipelineId: input.pipelineId,
    new: newOut,
    old: oldOut,
    stats,
    unreadable: { count: unreadable.length, first: unreadable.slice(0, 5) },
    missingTopics: all.filter((r) => !r.exists).map((r) => r.topic),
    truncatedTopics: all.filter((r) => r.truncated).map((r) => r.topic),
    inputTopics,
  };
}
