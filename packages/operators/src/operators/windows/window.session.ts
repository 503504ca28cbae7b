// window.session: per-key activity sessions closed by a gap of inactivity (Flink's
// EventTimeSessionWindows.withGap), merged incrementally.
import { z } from "zod";
import { defineOperator } from "../../core/spec";
import { durationMs } from "../../pipeline/durations";
import { aggregateParams, AGGREGATE_DOCS, allowedLatenessParam, checkAggregateField, LATENESS_DOCS, WINDOW_OUTPUT_FIELDS, windowInputs, windowOutputs } from "./params";
import { SessionWindowOperator } from "./session-window";

export const windowSessionParams = z.strictObject({
  gapMs: durationMs().describe("Inactivity that closes a session (ms, or e.g. \"30m\"): a session ends gapMs after its last record"),
  aggregate: aggregateParams,
  allowedLatenessMs: allowedLatenessParam(),
});
export type WindowSessionParams = z.infer<typeof windowSessionParams>;

export const windowSessionSpec = defineOperator({
  type: "window.session",
  version: 1,
  category: "window",
  title: "Session window",
  summary: "Aggregate each key's bursts of activity separated by a gap (e.g. card sessions with 30 min of silence)",
  docs: `Groups each key's records into sessions: a record at *t* opens the window [t, t + gapMs), and
windows of the same key that overlap **or touch** merge (a record at exactly a session's end joins it, as in
Flink). A session fires when the watermark passes its end − 1, i.e. gapMs after its last record, emitting
\`{ key, windowStart, windowEnd, value }\` where windowEnd is last record + gapMs. An out-of-order record can
bridge two sessions into one.

For sessions closed by a business event (logout) or with per-type counts, use \`sessionize\`.

${AGGREGATE_DOCS}

${LATENESS_DOCS}

**State.** Per key, the open sessions (usually one) with their accumulators, and one timer.`,
  params: windowSessionParams,
  inputs: windowInputs,
  outputs: windowOutputs,
  requiresKeyedInput: true,
  stateful: true,
  outputFields: () => WINDOW_OUTPUT_FIELDS,
  stateRetention: (p) => ({ windowMs: p.gapMs + p.allowedLatenessMs, freedByTimers: true }),
  check: (p, ctx) => checkAggregateField(p.aggregate, ctx),
  create: (p, init) => new SessionWindowOperator(init.nodeId, p.gapMs, p.aggregate, p.allowedLatenessMs),
});
