// window.tumbling: fixed, non-overlapping event-time windows per key (Flink's
// TumblingEventTimeWindows with an incremental AggregateFunction). One slice per window.
import { z } from "zod";
import { defineOperator } from "../../core/spec";
import { durationMs } from "../../pipeline/durations";
import { aggregateParams, AGGREGATE_DOCS, allowedLatenessParam, checkAggregateField, LATENESS_DOCS, WINDOW_OUTPUT_FIELDS, windowInputs, windowOutputs } from "./params";
import { PARTIAL_DOCS, PARTIAL_OUTPUT_FIELDS, partialParam } from "./combine";
import { SlicedWindowOperator, sliceColumnsTimers } from "./sliced-window";

export const windowTumblingParams = z.strictObject({
  sizeMs: durationMs().describe("Window length (ms, or e.g. \"1m\", \"1h\"); windows are aligned to the epoch: [k·size, (k+1)·size) in UTC"),
  aggregate: aggregateParams,
  allowedLatenessMs: allowedLatenessParam(),
  partial: partialParam(),
});
export type WindowTumblingParams = z.infer<typeof windowTumblingParams>;

export const windowTumblingSpec = defineOperator({
  type: "window.tumbling",
  version: 1,
  category: "window",
  title: "Tumbling window",
  summary: "Aggregate each key over fixed, back-to-back windows (e.g. count per card per 5 minutes)",
  docs: `Splits each key's records into fixed windows of \`sizeMs\`, back to back and aligned to the epoch
(a 1 h window runs from hh:00 to the next hh:00 UTC), and emits one aggregate per key and window.
Every record belongs to exactly one window. For day boundaries in a local time zone use \`dailyTotal\`.

${AGGREGATE_DOCS}

${LATENESS_DOCS}

${PARTIAL_DOCS}

**State.** Per key, one accumulator per window not yet purged (usually one; a few under out-of-order input)
and one timer. On the heap backend a \`count\` keeps its windows by time instead: one list of per-key counts per
window, fired in key order when the watermark passes its end (the same results and snapshots, and its timers are
implied by the snapshot's state).`,
  params: windowTumblingParams,
  inputs: windowInputs,
  outputs: windowOutputs,
  requiresKeyedInput: true,
  stateful: true,
  outputFields: (p) => (p.partial === true ? PARTIAL_OUTPUT_FIELDS : WINDOW_OUTPUT_FIELDS),
  stateRetention: (p) => ({ windowMs: p.sizeMs + p.allowedLatenessMs, freedByTimers: true }),
  check: (p, ctx) => checkAggregateField(p.aggregate, ctx),
  impliedTimers: (p) => sliceColumnsTimers(p.aggregate),
  create: (p, init) => new SlicedWindowOperator(init.nodeId, p.sizeMs, p.sizeMs, p.aggregate, p.allowedLatenessMs, p.partial === true),
});
