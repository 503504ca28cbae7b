// POST /dry-run: runs a (draft) pipeline in bounded mode on a sample and answers with what each node
// and port saw, the alerts with the sample records behind them, and the dead letters. Nothing is
// deployed, checkpointed or written.
//
// Body: { pipeline, records, sourceNodeId?, inputs? }
//   records: string[]             JSON lines for the pipeline's source (the first source feeding a
//                                 main input, or `sourceNodeId`), replacing whatever it reads;
//          | { topic?, lastN }    the last N records of a Kafka topic (default: that source's topic).
//   inputs: { [sourceNodeId]: string[] | { topic?, lastN } }   one sample per source, for pipelines
//                                 with several (a reference stream beside the payments).
import { z } from "zod";
import type { PipelineDocument } from "@keyflow/operators";
import type { RunnerEnv } from "../env";
import type { Logger } from "../log";
import { errorMessage } from "../log";
import { primarySource, type DryRunInput, type DryRunResult } from "../job/dry-run";
import { DryRunAbortedError, dryRunIsolated } from "../job/dry-run-isolated";
import { readLastRecords } from "../job/dry-run-kafka";

export const MAX_SAMPLE_LINES = 100_000;
export const MAX_LAST_N = 10_000;

const lines = z.array(z.string()).max(MAX_SAMPLE_LINES, { error: `a sample has at most ${MAX_SAMPLE_LINES} lines` });
const fromTopic = z.strictObject({
  topic: z.string().min(1).optional(),
  lastN: z.number().int().min(1).max(MAX_LAST_N),
});
const sampleSchema = z.union([lines, fromTopic]);
export type DryRunSample = z.infer<typeof sampleSchema>;

export const dryRunRequestSchema = z
  .object({
    pipeline: z.unknown(),
    records: sampleSchema.optional(),
    sourceNodeId: z.string().min(1).optional(),
    inputs: z.record(z.string(), sampleSchema).optional(),
    recordLimit: z.number().int().min(1).max(1_000).optional(),
  })
  .refine((b) => b.records !== undefined || b.inputs !== undefined, { error: "give `records` (JSON lines, or { topic, lastN }) or `inputs` per source" });
export type DryRunRequest = z.infer<typeof dryRunRequestSchema>;

/** A request the pipeline cannot serve (an unknown source, a topic for a file source, an engine refusal). */
export class DryRunRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function runDryRun(doc: PipelineDocument, req: DryRunRequest, deps: { env: RunnerEnv; log: Logger }): Promise<DryRunResult> {
  const samples: [string, DryRunSample][] = Object.entries(req.inputs ?? {});
  if (req.records !== undefined) {
    const target = req.sourceNodeId ?? primarySource(doc);
    if (target === undefined) throw new DryRunRequestError(400, `pipeline "${doc.name}" has no source to give the sample to`);
    samples.unshift([target, req.records]);
  }
  const inputs: DryRunInput[] = [];
  const warnings: string[] = [];
  for (const [sourceNodeId, sample] of samples) {
    const node = doc.nodes.find((n) => n.id === sourceNodeId);
    if (!node || !node.type.startsWith("source.")) {
      const sources = doc.nodes.filter((n) => n.type.startsWith("source.")).map((n) => `"${n.id}"`);
      throw new DryRunRequestError(400, `node "${sourceNodeId}" is not a source of pipeline "${doc.name}" (its sources: ${sources.join(", ") || "none"})`);
    }
    if (Array.isArray(sample)) {
      inputs.push({ sourceNodeId, lines: sample, label: "sample" });
      continue;
    }
    const params = node.params as { topic?: unknown; brokers?: unknown; timestampField?: unknown };
    const topic = sample.topic ?? (node.type === "source.kafka" && typeof params.topic === "string" ? params.topic : undefined);
    if (topic === undefined) throw new DryRunRequestError(400, `node "${sourceNodeId}" (${node.type}) reads no Kafka topic: name the topic to sample`);
    try {
      const read = await readLastRecords({
        sourceNodeId,
        topic,
        lastN: sample.lastN,
        brokers: Array.isArray(params.brokers) ? params.brokers.filter((b): b is string => typeof b === "string") : undefined,
        defaultBrokers: deps.env.kafkaBrokers,
        timestampField: typeof params.timestampField === "string" ? params.timestampField : "ts",
        log: deps.log.child("kafka"),
      });
      inputs.push(read.input);
      warnings.push(...read.warnings);
    } catch (err) {
      throw new DryRunRequestError(502, errorMessage(err));
    }
  }
  let result: DryRunResult;
  try {
    // Apart from the jobs: a draft that exhausts its worker's heap or time is an error here, nothing more.
    result = await dryRunIsolated(doc, inputs, {
      log: deps.log,
      ...(req.recordLimit !== undefined ? { recordLimit: req.recordLimit } : {}),
      sandbox: {
        ...(deps.env.sandboxTimeoutMs !== undefined ? { timeoutMs: deps.env.sandboxTimeoutMs } : {}),
        ...(deps.env.sandboxMemoryLimitMb !== undefined ? { memoryLimitMb: deps.env.sandboxMemoryLimitMb } : {}),
        onLog: (nodeId, line) => deps.log.debug(`node "${nodeId}": ${line}`),
      },
    });
  } catch (err) {
    if (err instanceof DryRunAbortedError) throw new DryRunRequestError(422, err.message);
    throw new DryRunRequestError(422, `the pipeline cannot run: ${errorMessage(err)}`);
  }
  deps.log.debug(`dry run of "${doc.name}": ${Object.values(result.inputs).reduce((n, i) => n + i.records, 0)} records in, ${result.alerts.count} alerts, ${result.deadLetters.count} dead letters, ${result.durationMs} ms`);
  return { ...result, warnings: [...warnings, ...result.warnings] };
}
