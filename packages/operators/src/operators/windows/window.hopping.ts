// window.hopping: overlapping event-time windows of sizeMs starting every slideMs (Flink's
// SlidingEventTimeWindows), computed from shared slices of gcd(size, slide) so a record updates
// one slice instead of size ÷ slide windows.
import { z } from "zod";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { durationMs, formatDuration } from "../../pipeline/durations";
import { gcd } from "./assigners";
import { aggregateParams, AGGREGATE_DOCS, allowedLatenessParam, checkAggregateField, LATENESS_DOCS, WINDOW_OUTPUT_FIELDS, windowInputs, windowOutputs } from "./params";
import { PARTIAL_DOCS, PARTIAL_OUTPUT_FIELDS, partialParam } from "./combine";
import { SlicedWindowOperator, sliceColumnsTimers } from "./sliced-window";

export const windowHoppingParams = z.strictObject({
  sizeMs: durationMs().describe("Window length (ms, or e.g. \"1h\")"),
  slideMs: durationMs().describe("How often a new window starts (ms, or e.g. \"1m\"); windows start at multiples of it since the epoch. Usually divides sizeMs"),
  aggregate: aggregateParams,
  allowedLatenessMs: allowedLatenessParam(),
  partial: partialParam(),
})
  // Refused, not kept as Flink's sampling: with slide > size the windows leave gaps, and a record
  // in a gap is in no window. A fraud rule counting "activity in the last X" must not skip records
  // an attacker can time into the gaps, and swapped params are the usual cause; a sample is
  // better said explicitly with a filter. Refusing here (rather than routing gap records to a side
  // port) means no record is ever assigned to nothing.
  .superRefine((p, ctx) => {
    if (p.slideMs > p.sizeMs) {
      ctx.addIssue({
        code: "custom",
        path: ["slideMs"],
        input: p.slideMs,
        message: `must not be longer than sizeMs (${formatDuration(p.sizeMs)}), got ${formatDuration(p.slideMs)}: the windows would have gaps and records between them would be in no window; did you swap them? (to sample a stream, filter it first)`,
      });
    }
  });
export type WindowHoppingParams = z.infer<typeof windowHoppingParams>;

/** Above this many slices per window, state per key stops being small: warn. */
const MAX_SLICES_PER_WINDOW = 10_000;

export const windowHoppingSpec = defineOperator({
  type: "window.hopping",
  version: 1,
  category: "window",
  title: "Hopping window",
  summary: "Aggregate each key over overlapping windows (e.g. a 1 h count every minute)",
  docs: `Windows of \`sizeMs\` that start every \`slideMs\` (aligned to the epoch), so each record belongs to
size ÷ slide windows: a "transactions per card in the last hour, updated every minute" check.
Each key emits one result per window that holds any of its records.

**State is shared between windows.** Records are aggregated into slices of gcd(size, slide) (1 min for a 1 h
window sliding every minute); a window's result is merged from its slices when it fires. A record updates one
slice, not 60 windows, and a key keeps only the slices that hold data: state grows with slices, not with
size ÷ slide (the seeds' 10 M keys × 60 windows = 600 M entries case). Choose a slide that divides the size:
otherwise the slices shrink to their gcd. On the heap backend:
- a \`count\` keeps its slices by time: one list of per-key counts per slice (only the keys with records in it), and
  each key's running count of the window being built. A record adds 1 to the newest list; a window end adds the
  newest slice to every key's count, emits it (in key order) and takes out the slice the next window leaves.
- a \`sum\` or \`avg\` over windows of 8 slices or more keeps each key's running total, so a firing reads two
  slices instead of merging all of them.

Results are the same bit for bit as merging every slice (a sum of fractions, which rounds, is merged as before),
and so are snapshots: a restore on another backend continues exactly.

${AGGREGATE_DOCS}

${LATENESS_DOCS}

${PARTIAL_DOCS}

**Output volume.** A key emits a result every \`slideMs\` for as long as its last record is within \`sizeMs\`:
a 1 h / 1 s hop emits 3600 results per record on a quiet key. \`slideMs\` may not exceed \`sizeMs\`: such windows
would leave gaps, and a record in a gap would belong to no window (filter the stream first to sample it).`,
  params: windowHoppingParams,
  inputs: windowInputs,
  outputs: windowOutputs,
  requiresKeyedInput: true,
  stateful: true,
  outputFields: (p) => (p.partial === true ? PARTIAL_OUTPUT_FIELDS : WINDOW_OUTPUT_FIELDS),
  stateRetention: (p) => ({ windowMs: p.sizeMs + p.allowedLatenessMs, freedByTimers: true }),
  check: (p, ctx) => {
    const issues: ParamIssue[] = checkAggregateField(p.aggregate, ctx);
    const step = gcd(p.sizeMs, p.slideMs);
    if (p.sizeMs / step > MAX_SLICES_PER_WINDOW) {
      issues.push({ severity: "warning", param: "slideMs", message: `node "${ctx.nodeId}": sizeMs and slideMs share only a ${formatDuration(step)} divisor, so each window is ${Math.round(p.sizeMs / step)} slices of state; pick a slide that divides the size` });
    } else if (p.sizeMs / p.slideMs > 1000) {
      issues.push({ severity: "warning", param: "slideMs", message: `node "${ctx.nodeId}": each record is in ${Math.round(p.sizeMs / p.slideMs)} windows, and each key emits that many results per record; is the slide too short?` });
    }
    return issues;
  },
  impliedTimers: (p) => sliceColumnsTimers(p.aggregate),
  create: (p, init) => new SlicedWindowOperator(init.nodeId, p.sizeMs, p.slideMs, p.aggregate, p.allowedLatenessMs, p.partial === true),
});
