// source.file: reads a JSON-lines file (one record per line). Only the spec lives here: the
// runner and `keyflow run` read the file, inside their data folder.
import { z } from "zod";
import { defineOperator } from "../../core/spec";
import { declaredFieldsParam, idleTimeoutParam, maxOutOfOrdernessParam, sourceOutputs, timestampFieldParam } from "../event-time";

export const sourceFileParams = z.strictObject({
  path: z
    .string()
    .min(1, { error: "must be a file path, e.g. \"data/payments.jsonl\"" })
    .describe("JSON-lines file to read; a relative path inside the data folder (the runner's, or the pipeline file's folder for `keyflow run`)"),
  timestampField: timestampFieldParam(),
  maxOutOfOrdernessMs: maxOutOfOrdernessParam(),
  idleTimeoutMs: idleTimeoutParam(),
  fields: declaredFieldsParam(),
});
export type SourceFileParams = z.infer<typeof sourceFileParams>;

export const sourceFileSpec = defineOperator({
  type: "source.file",
  version: 1,
  category: "source",
  title: "File source",
  summary: "Read JSON lines from a file: a bounded input for backtests and `keyflow run`",
  docs: `Reads a file of JSON lines, one record per line (blank lines are skipped). \`path\` is relative to
the data folder (the runner's \`KEYFLOW_DATA_DIR\`, or the pipeline file's folder for \`keyflow run\`, so a pipeline
and its sample data can live together in git) and must stay inside it.

The file is **bounded**: at its end the source's watermark becomes +∞, so every window and event-time timer
fires before the job ends. Event time comes from \`timestampField\`; the watermark is
\`max event time seen − maxOutOfOrdernessMs − 1\`, so records out of order by up to that bound are on time.

A line that is not a JSON object, or lacks its timestamp, becomes a dead letter with the reason and its
line number; the job keeps running.`,
  params: sourceFileParams,
  inputs: [],
  outputs: sourceOutputs,
  requiresKeyedInput: false,
  stateful: false,
  filePaths: ["path"],
  outputFields: (params) => params.fields,
});
