// The `keyflow.pipeline/v1` document: what the canvas edits, Postgres stores and the CLI runs.
// This schema checks only the document's shape; operator params and graph rules are checked by
// the validator (../validate), which reads the operator catalog.
import { z } from "zod";
import { DEFAULT_MAX_JOB_STATE_BYTES, DEFAULT_MAX_STATE_BYTES_PER_KEY, MAX_CODE_LENGTH } from "../limits";

export const PIPELINE_FORMAT = "keyflow.pipeline/v1";

/** Node ids double as state handles in checkpoints, so they are stable, readable identifiers. */
export const nodeIdSchema = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, "a node id starts with a letter and has only letters, digits, _ and - (at most 64)");

export const pipelineSettingsSchema = z.object({
  checkpointIntervalMs: z.number().int().positive().default(60_000).describe("Milliseconds between aligned checkpoints"),
  minPauseBetweenCheckpointsMs: z.number().int().nonnegative().default(0).describe("Least pause after one checkpoint completes before the next starts"),
  checkpointTimeoutMs: z.number().int().positive().default(600_000).describe("A checkpoint not acknowledged by every task within this time fails"),
  retainedCheckpoints: z.number().int().positive().default(3).describe("How many completed checkpoints are kept"),
  parallelism: z.number().int().min(1).max(128).default(1).describe("Subtasks per keyed operator"),
  maxParallelism: z.number().int().min(1).max(32_768).default(128).describe("Number of key groups: the upper bound for rescaling; never change it on a running job"),
  stateBackend: z.enum(["heap", "disk"]).default("heap").describe("Where keyed state lives: in memory, or in an embedded on-disk store"),
  maxStateBytesPerKey: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_MAX_STATE_BYTES_PER_KEY)
    .describe("Most bytes of state one key may keep in a node whose code decides what it keeps (process.custom), estimated as in the state size badge; a key over it fails the job naming node and key. Default 1 MB"),
  maxJobStateBytes: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_MAX_JOB_STATE_BYTES)
    .describe("Memory budget of the job's keyed state on the heap (every node and keyed subtask), estimated as in the state size badge and checked about once a second; over it the job fails naming the largest node. Not applied to stateBackend \"disk\". Default 512 MB"),
  deadLetterTopic: z.string().min(1).optional().describe("Kafka topic for dead letters; default `<pipeline name>.dlq`"),
});
export type PipelineSettings = z.infer<typeof pipelineSettingsSchema>;

export const positionSchema = z.object({ x: z.number(), y: z.number() });

/**
 * No text in a node's params is longer than the longest field (process.custom's code): a 5 MB
 * paste is refused at every boundary (tRPC, runner API, CLI) before it is stored. Expression
 * params have their own, shorter limit in their operator's schema (the validator).
 */
function refuseLongTexts(node: { id: string; params: Record<string, unknown> }, ctx: z.RefinementCtx): void {
  const visit = (v: unknown, path: string[], depth: number): void => {
    if (typeof v === "string") {
      if (v.length > MAX_CODE_LENGTH) {
        ctx.addIssue({ code: "custom", path: ["params", ...path], message: `node "${node.id}": param "${path.join(".")}" is ${v.length} characters long, over the limit of ${MAX_CODE_LENGTH} for a param` });
      }
    } else if (depth < 8 && v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) visit(x, [...path, k], depth + 1);
    }
  };
  for (const [k, v] of Object.entries(node.params)) visit(v, [k], 0);
}

export const pipelineNodeSchema = z.object({
  id: nodeIdSchema,
  type: z.string().min(1),
  /** Operator spec version the params were written for; absent means the newest. */
  version: z.number().int().positive().optional(),
  label: z.string().optional(),
  notes: z.string().optional(),
  params: z.record(z.string(), z.unknown()).default({}),
  position: positionSchema.optional(),
}).superRefine(refuseLongTexts);
export type PipelineNode = z.infer<typeof pipelineNodeSchema>;

/** `nodeId` (the main port) or `nodeId:port` (a named port such as `late`, `errors`, `reference`). */
export const edgeEndSchema = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}(:[A-Za-z][A-Za-z0-9_-]*)?$/, "an edge end is `nodeId` or `nodeId:port`");

export const pipelineEdgeSchema = z.object({ from: edgeEndSchema, to: edgeEndSchema });
export type PipelineEdge = z.infer<typeof pipelineEdgeSchema>;

export const pipelineDocumentSchema = z.object({
  format: z.literal(PIPELINE_FORMAT),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "a pipeline name has letters, digits, '.', '_' and '-' (it names Kafka topics such as `<name>.dlq`)"),
  description: z.string().optional(),
  settings: pipelineSettingsSchema.default(pipelineSettingsSchema.parse({})),
  nodes: z.array(pipelineNodeSchema),
  edges: z.array(pipelineEdgeSchema).default([]),
});
/** A document as written (settings and params may be partial). */
export type PipelineDocumentInput = z.input<typeof pipelineDocumentSchema>;
/** A document after parsing: settings filled with defaults. */
export type PipelineDocument = z.infer<typeof pipelineDocumentSchema>;

export interface EdgeEnd {
  nodeId: string;
  /** Absent for the main port. */
  port?: string;
}

export function parseEdgeEnd(end: string): EdgeEnd {
  const i = end.indexOf(":");
  return i < 0 ? { nodeId: end } : { nodeId: end.slice(0, i), port: end.slice(i + 1) };
}
