// sink.file: writes records as JSON lines. Only the spec lives here; the runner and
// `keyflow run` write the file, relative to the pipeline file's folder.
import { z } from "zod";
import { defineOperator } from "../../core/spec";

export const sinkFileParams = z.strictObject({
  path: z
    .string()
    .min(1, { error: "must be a file path, e.g. \"out/alerts.jsonl\"" })
    .describe("JSON-lines file to write, one record per line; a relative path resolves against the folder of the pipeline file"),
});
export type SinkFileParams = z.infer<typeof sinkFileParams>;

export const sinkFileSpec = defineOperator({
  type: "sink.file",
  version: 1,
  category: "sink",
  title: "File sink",
  summary: "Write each record as one JSON line to a file",
  docs: `Writes each incoming record as one line of JSON. A relative \`path\` resolves against the folder of the
pipeline file. Records are written in the order the job emits them, which for a replay of the same input is
always the same: golden tests compare these files byte for byte.`,
  params: sinkFileParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], multiple: true, required: true }],
  outputs: [],
  requiresKeyedInput: false,
  stateful: false,
});
