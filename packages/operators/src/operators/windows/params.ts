// Params and ports shared by the three window operators.
import type { z } from "zod";
import type { InputPortSpec, OutputPortSpec, ParamCheckContext, ParamIssue } from "../../core/spec";
import { durationMs } from "../../pipeline/durations";
import { errorsPort } from "../side-outputs";
import { aggregateParams, type AggregateParams } from "./aggregate";

export { aggregateParams };

export const allowedLatenessParam = () =>
  durationMs({ allowZero: true })
    .default(0)
    .describe(
      "How long (ms of event time, or e.g. \"1m\") after a window fires it still accepts late records, each re-emitting the window's updated result; the window's state is kept that much longer. 0: a window is final when it fires",
    );

export const windowInputs: readonly InputPortSpec[] = [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }];

export const windowOutputs: readonly OutputPortSpec[] = [
  { id: "out", label: "window results", kind: "keyed", description: "{ key, windowStart, windowEnd, value } per key and window, at event time windowEnd − 1" },
  {
    id: "late",
    label: "late records",
    kind: "keyed",
    side: true,
    description: "Records that arrived after every window they belong to was purged, unchanged; unconnected, they become dead letters",
  },
  errorsPort("keyed"),
];

export const WINDOW_OUTPUT_FIELDS: readonly string[] = ["key", "windowStart", "windowEnd", "value"];

/** Warns when the aggregated field is not among the fields known upstream. */
export function checkAggregateField(aggregate: AggregateParams, ctx: ParamCheckContext): ParamIssue[] {
  const field = aggregate.field;
  if (field === undefined || ctx.inputFields === undefined) return [];
  const top = ctx.inputFields.includes(field) ? field : field.split(".")[0];
  if (top !== undefined && ctx.inputFields.includes(top)) return [];
  return [
    {
      severity: "warning",
      param: "aggregate.field",
      message: `node "${ctx.nodeId}": field "${field}" is not among the input's fields (${ctx.inputFields.join(", ")}); records without it ${aggregate.op === "count" || aggregate.op === "distinctCount" ? "add nothing to the window" : "go to the errors port"}`,
    },
  ];
}

export type WindowCommonParams = { aggregate: z.infer<typeof aggregateParams>; allowedLatenessMs: number };

export const AGGREGATE_DOCS = `**Aggregate.** \`aggregate.op\` is one of \`count\`, \`sum\`, \`min\`, \`max\`, \`avg\`, \`distinctCount\`;
every op but \`count\` needs \`aggregate.field\`. Aggregation is incremental: each window keeps an accumulator
(a number; \`avg\` a sum and a count), never the records, except \`distinctCount\`, which must keep the distinct
values it has seen. Records whose field is missing or not numeric go to \`errors\` for sum/min/max/avg; for
\`count\` with a field and for \`distinctCount\` they add nothing (as SQL's COUNT(x) and COUNT(DISTINCT x)).
Sums are IEEE doubles: aggregate minor units (cents) for exact money totals.`;

export const LATENESS_DOCS = `**Time.** Windows are [start, end) in event time. A window fires once, when the watermark reaches
end − 1, emitting \`{ key, windowStart, windowEnd, value }\` with timestamp end − 1. With \`allowedLatenessMs\`,
a record that arrives after its window fired but before end − 1 + allowedLatenessMs updates it and the window
is emitted again with the new value (downstream sees a retraction-free update: the latest one wins). A record
later than that for every window it belongs to goes to \`late\` unchanged; unconnected, it becomes a dead letter.
At the end of a bounded input every window fires.`;
