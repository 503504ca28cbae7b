// sink.file: writes records as JSON lines. Only the spec lives here; the runner and
// `keyflow run` write the file, inside their data folder.
import { z } from "zod";
import { defineOperator } from "../../core/spec";

export const sinkFileParams = z.strictObject({
  path: z
    .string()
    .min(1, { error: "must be a file path, e.g. \"out/alerts.jsonl\"" })
    .describe("JSON-lines file to write, one record per line; a relative path inside the data folder (the runner's, or the pipeline file's folder for `keyflow run`)"),
});
export type SinkFileParams = z.infer<typeof sinkFileParams>;

export const sinkFileSpec = defineOperator({
  type: "sink.file",
  version: 1,
  category: "sink",
  title: "File sink",
  summary: "Write each record as one JSON line to a file",
  docs: `Writes each incoming record as one line of JSON. \`path\` is relative to the data folder (the runner's
\`KEYFLOW_DATA_DIR\`, or the pipeline file's folder for \`keyflow run\`) and must stay inside it. Two sinks never write
one file. Records are written in the order the job emits them, which for a replay of the same input is
always the same: golden tests compare these files byte for byte.`,
  params: sinkFileParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], multiple: true, required: true }],
  outputs: [],
  requiresKeyedInput: false,
  stateful: false,
  filePaths: ["path"],
  writes: { param: "path", kind: "file" },
});
