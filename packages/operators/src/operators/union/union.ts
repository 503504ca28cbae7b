// union: merges several streams into one (Flink's DataStream#union). Records pass unchanged in
// arrival order; the output's watermark is the minimum of the inputs' (the engine computes it).
import { z } from "zod";
import { defineOperator } from "../../core/spec";

export const unionParams = z.strictObject({});
export type UnionParams = z.infer<typeof unionParams>;

export const unionSpec = defineOperator({
  type: "union",
  version: 1,
  category: "transform",
  title: "Union",
  summary: "Merge several streams into one",
  docs: `Merges every stream connected to its input into one stream, records unchanged. The output is an
unkeyed stream even when the inputs are keyed: add a keyBy after the union to key the merged stream.

**Event time.** The union's watermark is the minimum of its inputs' watermarks, so a slow or idle input
holds back windows downstream: give sources an \`idleTimeoutMs\` when one of them can go quiet.`,
  params: unionParams,
  inputs: [{ id: "in", label: "streams", accepts: ["stream", "keyed"], multiple: true, required: true }],
  outputs: [{ id: "out", label: "merged", kind: "stream" }],
  requiresKeyedInput: false,
  stateful: false,
  // The validator passes the fields of all inputs together (any input's field may appear).
  outputFields: (_params, inputFields) => inputFields,
  create() {
    return {
      processElement(record, ctx) {
        ctx.output(record.value);
      },
    };
  },
});
