// The comparison an approver reads before a promotion: two sides' alerts over the same events. A
// side is a version in shadow or enforcing (the newest such deployments unless told), a backtest
// (its own topic), or an existing rule engine's alerts read from a topic with their id field (the
// seeds' validation step). Each side's topics are read to their current end (comparison-kafka.ts)
// and the alerts matched by record id (comparison-stats.ts). Labels come from a field of the records
// (the input topic is read for recall's denominator) or from a chargeback topic joined by
// transaction id. Against a backtest over a Kafka range, the range's records are read too, and
// both sides are restricted to alerts on them, so "only old" does not count the rest of the topic;
// against a backtest over an uploaded file, the file is read back from the runner the same way.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import type { DeploymentMode, PrismaClient } from "@keyflow/db";
import { RULE_VERSION_FIELD, RULE_VERSION_HEADER, type PipelineDocument } from "@keyflow/operators";
import { notFound } from "../errors";
import { fromJsonColumn } from "../json";
import { backtestRangeSchema, type BacktestRange } from "./backtests";
import { alertTopics } from "./deployment-mode";
import { kafkaClient, readTopicToEnd, type TopicRange, type TopicRead } from "./comparison-kafka";
import { compareAlerts, labelOf, parseAlert, type ComparisonStats, type ReadAlert, type UnreadableAlert } from "./comparison-stats";

/** Per topic read; beyond it the read stops and the answer says it was truncated. */
const MAX_MESSAGES = 500_000;

export const comparisonSideSchema = z.discriminatedUnion("kind", [
  /** A version's shadow deployment (default: the newest one). */
  z.object({ kind: z.literal("shadow"), versionId: z.string().min(1).optional() }),
  /** A version's enforcing deployment (default: the newest one of another version than the other side's). */
  z.object({ kind: z.literal("enforcing"), versionId: z.string().min(1).optional() }),
  z.object({ kind: z.literal("backtest"), backtestId: z.string().min(1) }),
  /** Another rule engine's alerts: a topic, and the field of its messages holding the transaction id. */
  z.object({ kind: z.literal("topic"), topic: z.string().trim().min(1), idField: z.string().trim().min(1).max(200) }),
]);
export type ComparisonSideInput = z.infer<typeof comparisonSideSchema>;

export const comparisonLabelsSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("none") }),
  z.object({ kind: z.literal("field"), field: z.string().trim().min(1).max(200) }),
  /** A chargeback topic: each message names a charged-back transaction in `idField`. */
  z.object({ kind: z.literal("chargebacks"), topic: z.string().trim().min(1), idField: z.string().trim().min(1).max(200) }),
]);
export type ComparisonLabels = z.infer<typeof comparisonLabelsSchema>;

export interface ComparisonInput {
  pipelineId: string;
  /** The challenger; default: the newest shadow deployment's version (or `newVersionId` in shadow). */
  newSide?: ComparisonSideInput | undefined;
  /** The incumbent; default: the newest enforcing deployment of another version (or `oldVersionId` enforcing). */
  oldSide?: ComparisonSideInput | undefined;
  newVersionId?: string | undefined;
  oldVersionId?: string | undefined;
  /** Label field in the records (e.g. isFraud); null: no precision and recall. `labels` wins when given. */
  labelField: string | null;
  labels?: ComparisonLabels | undefined;
  /**
   * Event-time bounds; default: none, both topics whole. (A default such as "the span both versions'
   * alerts cover" would hide the new version's alerts after the old one's last alert.)
   */
  range?: { fromTs: number | null; toTs: number | null } | undefined;
  samples: number;
}

export type SideKind = DeploymentMode | "backtest" | "topic";

interface Side {
  kind: SideKind;
  /** How the UI names it: "v2 shadow", "backtest ck… of v2", "topic legacy.alerts". */
  label: string;
  versionId: string | null;
  number: number | null;
  /** Kept for readers of the shadow/enforcing comparison: the deployment mode, "test" for a backtest, null for a topic. */
  mode: DeploymentMode | null;
  topics: string[];
  idField: string;
  graph: PipelineDocument | null;
  /** A backtest's range (the other side is restricted to it when it is a Kafka range). */
  backtestRange: BacktestRange | null;
}

/** A side as the UI gets it: without its graph, with the parameters its alerts were raised with. */
export type SideOut = Omit<Side, "graph"> & {
  /** The version's processing nodes (no sources or sinks) and their params: part of each alert's explanation. */
  parameters: { nodeId: string; type: string; params: unknown }[];
};

function sideOut({ graph, ...side }: Side): SideOut {
  const parameters = (graph?.nodes ?? []).filter((n) => !n.type.startsWith("source.") && !n.type.startsWith("sink.")).map((n) => ({ nodeId: n.id, type: n.type, params: n.params }));
  return { ...side, parameters };
}

export interface Comparison {
  pipelineId: string;
  new: SideOut;
  old: SideOut;
  stats: ComparisonStats;
  unreadable: { count: number; first: UnreadableAlert[] };
  /** Topics that do not exist yet (the version has written nothing), and reads cut at MAX_MESSAGES. */
  missingTopics: string[];
  truncatedTopics: string[];
  /** Topics whose earliest messages the broker has deleted (retention): the comparison counts only what is left. */
  deletedTopics: { topic: string; logStart: Record<string, string> }[];
  inputTopics: string[];
  /** Both sides restricted to the records of a backtest's range (alerts on others left out, counted in stats.outOfScope). */
  scopedToRange: boolean;
  /** A file backtest's file, when its records were read (labels, scope); null otherwise. */
  inputFile: string | null;
  /** Why the compared records could not be read (a file on the runner that is not an upload): no scope, no recall. */
  inputUnavailable: string | null;
  /** Alerts tagged with another version than their side's (several versions share `<rule>.shadow`): left out. */
  otherVersions: number;
}

/** The record id field the rule cites in its evidence: the first `idField` param of its nodes, else "id". */
export function idFieldOf(graph: PipelineDocument): string {
  for (const node of graph.nodes) {
    const value = (node.params as Record<string, unknown>).idField;
    if (typeof value === "string" && value.length > 0) return value;
  }
  return "id";
}

async function versionSide(prisma: PrismaClient, pipelineId: string, versionId: string | undefined, mode: DeploymentMode, exceptVersion: string | null): Promise<Side> {
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
  return { kind: mode, label: `v${version.number} ${mode === "enforcing" ? "enforcing" : mode}`, versionId: version.id, number: version.number, mode, topics, idField: idFieldOf(graph), graph, backtestRange: null };
}

async function backtestSide(prisma: PrismaClient, pipelineId: string, backtestId: string): Promise<Side> {
  const row = await prisma.backtest.findFirst({ where: { id: backtestId, pipelineId }, select: { id: true, range: true, alertTopic: true, version: { select: { id: true, number: true, graph: true, pipeline: { select: { name: true } } } } } });
  if (!row) throw notFound("backtest", backtestId);
  const graph = fromJsonColumn(row.version.graph, `version ${row.version.number} of ${row.version.pipeline.name}`);
  const topics = row.alertTopic.split(",").filter(Boolean);
  if (topics.length === 0) throw new TRPCError({ code: "PRECONDITION_FAILED", message: `backtest ${row.id} has no Kafka sink: its alerts cannot be read back for a comparison` });
  const range = backtestRangeSchema.safeParse(row.range);
  return { kind: "backtest", label: `v${row.version.number} backtest ${row.id.slice(-6)}`, versionId: row.version.id, number: row.version.number, mode: "test", topics, idField: idFieldOf(graph), graph, backtestRange: range.success ? range.data : null };
}

async function resolveSide(prisma: PrismaClient, pipelineId: string, side: ComparisonSideInput, exceptVersion: string | null): Promise<Side> {
  switch (side.kind) {
    case "shadow":
    case "enforcing":
      return versionSide(prisma, pipelineId, side.versionId, side.kind, exceptVersion);
    case "backtest":
      return backtestSide(prisma, pipelineId, side.backtestId);
    case "topic":
      return { kind: "topic", label: `topic ${side.topic}`, versionId: null, number: null, mode: null, topics: [side.topic], idField: side.idField, graph: null, backtestRange: null };
  }
}

/**
 * The version an alert says raised it, when it says: several versions of a rule share
 * `<rule>.shadow` (and, across a promotion, the enforcement topic), so the tag tells them apart.
 */
export function taggedVersion(headers: Readonly<Record<string, string>>, value: Record<string, unknown>): number | null {
  const h = headers[RULE_VERSION_HEADER]?.trim();
  if (h !== undefined && /^\d+$/.test(h)) return Number(h);
  const v = value[RULE_VERSION_FIELD];
  if (typeof v === "number" && Number.isInteger(v)) return v;
  if (typeof v === "string" && /^\d+$/.test(v.trim())) return Number(v.trim());
  return null;
}

function toAlerts(reads: readonly TopicRead[], side: Side, unreadable: UnreadableAlert[]): { alerts: ReadAlert[]; otherVersions: number } {
  const alerts: ReadAlert[] = [];
  let otherVersions = 0;
  for (const read of reads) {
    for (const m of read.messages) {
      const parsed = parseAlert(m.value);
      if (!parsed.ok) {
        unreadable.push({ topic: m.topic, partition: m.partition, offset: m.offset, reason: parsed.reason });
        continue;
      }
      if ((side.kind === "shadow" || side.kind === "enforcing") && side.number !== null) {
        const tag = taggedVersion(m.headers, parsed.value);
        if (tag !== null && tag !== side.number) {
          otherVersions++;
          continue;
        }
      }
      const alert: ReadAlert = { topic: m.topic, partition: m.partition, offset: m.offset, timestamp: m.timestamp, key: m.key, value: parsed.value };
      if (side.kind === "topic") {
        // Another engine's alert names the transaction in its own field, at the top level.
        const id = parsed.value[side.idField];
        if (typeof id !== "string" && typeof id !== "number") {
          unreadable.push({ topic: m.topic, partition: m.partition, offset: m.offset, reason: `no "${side.idField}" to match it by` });
          continue;
        }
        alert.recordId = String(id);
      }
      alerts.push(alert);
    }
  }
  return { alerts, otherVersions };
}

/** A backtest's Kafka range as a part of its input topic to read. */
function topicRangeOf(range: Extract<BacktestRange, { kind: "kafka" }>): TopicRange {
  return {
    startOffsets: range.from.by === "offsets" ? range.from.offsets : undefined,
    startTime: range.from.by === "time" ? range.from.ts : undefined,
    endOffsets: range.to.by === "offsets" ? range.to.offsets : undefined,
    endTime: range.to.by === "time" ? range.to.ts : undefined,
  };
}

/** Reads an uploaded file back from the runner (GET /files/uploads/<name>): a file backtest's records. */
export type UploadReader = (path: string) => Promise<string>;

/** The folder of the runner's uploads: only those can be read back (apps/runner/src/service/uploads.ts). */
const UPLOAD_PREFIX = "uploads/";

interface ComparedInput {
  topics: string[];
  range: TopicRange | undefined;
  /** A file backtest's file (its records are the input); null: the topics are. */
  file: string | null;
  scoped: boolean;
}

/**
 * Which input to read for labels and scope: a backtest's range (its topic or the graph's source
 * topics, or its file), else the new side's source topics whole. A file backtest's records are its
 * file's, not the live topic's: reading the topic there would count fraud the backtest never saw.
 */
function inputOf(newSide: Side, oldSide: Side): ComparedInput {
  const backtest = [newSide, oldSide].find((s) => s.backtestRange !== null);
  const graph = backtest?.graph ?? newSide.graph ?? oldSide.graph;
  const sourceTopics = graph ? graph.nodes.filter((n) => n.type === "source.kafka").map((n) => String((n.params as { topic?: unknown }).topic)) : [];
  const r = backtest?.backtestRange;
  if (r?.kind === "kafka") return { topics: r.topic !== undefined ? [r.topic] : sourceTopics, range: topicRangeOf(r), file: null, scoped: true };
  if (r?.kind === "file") return { topics: [], range: undefined, file: r.path, scoped: true };
  return { topics: sourceTopics, range: undefined, file: null, scoped: false };
}

const labelsOf = (input: ComparisonInput): ComparisonLabels => input.labels ?? (input.labelField === null ? { kind: "none" } : { kind: "field", field: input.labelField });

export async function compareVersions(prisma: PrismaClient, brokers: readonly string[] | undefined, input: ComparisonInput, readUpload?: UploadReader): Promise<Comparison> {
  if (!brokers || brokers.length === 0) throw new TRPCError({ code: "PRECONDITION_FAILED", message: "KAFKA_BROKERS is not set for the web app: it cannot read the alert topics to compare them" });
  const newSide = await resolveSide(prisma, input.pipelineId, input.newSide ?? { kind: "shadow", versionId: input.newVersionId }, null);
  const oldSide = await resolveSide(prisma, input.pipelineId, input.oldSide ?? { kind: "enforcing", versionId: input.oldVersionId }, newSide.versionId);
  if (newSide.kind === "backtest" && oldSide.kind === "backtest" && JSON.stringify(newSide.backtestRange) !== JSON.stringify(oldSide.backtestRange)) {
    throw new TRPCError({ code: "BAD_REQUEST", message: `${newSide.label} and ${oldSide.label} replayed different ranges: compare backtests over the same range` });
  }
  const kafka = kafkaClient(brokers);
  const newReads = await Promise.all(newSide.topics.map((t) => readTopicToEnd(kafka, t, MAX_MESSAGES)));
  const oldReads = await Promise.all(oldSide.topics.map((t) => readTopicToEnd(kafka, t, MAX_MESSAGES)));
  const unreadable: UnreadableAlert[] = [];
  const fresh = toAlerts(newReads, newSide, unreadable);
  const old = toAlerts(oldReads, oldSide, unreadable);

  const labels = labelsOf(input);
  const input$ = inputOf(newSide, oldSide);
  const idField = newSide.kind === "topic" ? oldSide.idField : newSide.idField;
  // A file backtest's records: read back from the runner when the file is one of its uploads.
  let fileText: string | null = null;
  let inputUnavailable: string | null = null;
  const wantsInput = labels.kind !== "none" || input$.scoped;
  if (input$.file !== null && wantsInput) {
    if (!input$.file.startsWith(UPLOAD_PREFIX)) {
      inputUnavailable = `the backtest's file ${input$.file} is not an upload: the runner does not read it back, so the comparison is not restricted to its records and recall is not computed`;
    } else if (readUpload === undefined) {
      inputUnavailable = "no runner to read the backtest's file back from: recall is not computed";
    } else {
      try {
        fileText = await readUpload(input$.file);
      } catch (err) {
        inputUnavailable = `the backtest's file could not be read back (${err instanceof Error ? err.message : String(err)}): recall is not computed`;
      }
    }
  }
  // The input is read when recall needs its fraud or a backtest's range restricts the comparison.
  const needInput = (input$.topics.length > 0 || fileText !== null) && wantsInput;
  const inputReads: TopicRead[] = [];
  const inputIds = new Set<string>();
  const labelledFraud = new Set<string>();
  let labelled = 0;
  const take = (value: Record<string, unknown>): void => {
    const id = value[idField];
    if (typeof id !== "string" && typeof id !== "number") return;
    inputIds.add(String(id));
    if (labels.kind !== "field") return;
    const label = labelOf(value, labels.field);
    if (label === null) return;
    labelled++;
    if (label) labelledFraud.add(String(id));
  };
  if (needInput && fileText !== null) {
    for (const line of fileText.split("\n")) {
      if (line.trim() === "") continue;
      const parsed = parseAlert(line);
      if (parsed.ok) take(parsed.value); // (the runner checked every line on upload)
    }
  } else if (needInput) {
    for (const topic of input$.topics) {
      const read = await readTopicToEnd(kafka, topic, MAX_MESSAGES, input$.range);
      inputReads.push(read);
      for (const m of read.messages) {
        const parsed = parseAlert(m.value);
        // A record the rule itself sends to dead letters: no verdict either way.
        if (parsed.ok) take(parsed.value);
      }
    }
  }

  let fraudIds: Set<string> | null = null;
  let chargebackIds: Set<string> | null = null;
  if (labels.kind === "field") fraudIds = needInput && labelled > 0 ? labelledFraud : null;
  if (labels.kind === "chargebacks") {
    const read = await readTopicToEnd(kafka, labels.topic, MAX_MESSAGES);
    inputReads.push(read);
    chargebackIds = new Set();
    for (const m of read.messages) {
      const parsed = parseAlert(m.value);
      if (!parsed.ok) {
        unreadable.push({ topic: m.topic, partition: m.partition, offset: m.offset, reason: `chargeback: ${parsed.reason}` });
        continue;
      }
      const id = parsed.value[labels.idField];
      if (typeof id === "string" || typeof id === "number") chargebackIds.add(String(id));
      else unreadable.push({ topic: m.topic, partition: m.partition, offset: m.offset, reason: `chargeback without a "${labels.idField}"` });
    }
    // Recall's denominator: the charged-back transactions among the records compared (all of them when the input was not read).
    fraudIds = needInput ? new Set([...chargebackIds].filter((id) => inputIds.has(id))) : inputUnavailable === null ? chargebackIds : null;
  }

  const stats = compareAlerts(fresh.alerts, old.alerts, {
    idField,
    range: input.range ?? { fromTs: null, toTs: null },
    samples: input.samples,
    labelField: labels.kind === "none" ? null : labels.kind === "field" ? labels.field : `chargebacks:${labels.topic}`,
    fraudIds,
    chargebackIds,
    scopeIds: input$.scoped ? inputIds : null,
  });
  const all = [...newReads, ...oldReads, ...inputReads];
  return {
    pipelineId: input.pipelineId,
    new: sideOut(newSide),
    old: sideOut(oldSide),
    stats,
    unreadable: { count: unreadable.length, first: unreadable.slice(0, 5) },
    missingTopics: all.filter((r) => !r.exists).map((r) => r.topic),
    truncatedTopics: all.filter((r) => r.truncated).map((r) => r.topic),
    deletedTopics: all.filter((r) => Object.keys(r.deletedBefore).length > 0).map((r) => ({ topic: r.topic, logStart: r.deletedBefore })),
    inputTopics: needInput ? input$.topics : [],
    otherVersions: fresh.otherVersions + old.otherVersions,
    scopedToRange: input$.scoped && needInput,
    inputFile: needInput ? input$.file : null,
    inputUnavailable,
  };
}
