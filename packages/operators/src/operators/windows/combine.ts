// Hot keys, two-stage aggregation (Flink SQL's local-global aggregation, the "salt + combine" of
// the seeds): keyBy { field, salt: n } spreads a hot key over n sub-keys `<value>#<i>`; a
// tumbling or hopping window with `partial: true` pre-aggregates per sub-key (the local stage)
// and emits its mergeable accumulator instead of the result, under the original key; a keyBy on
// `key` brings a key's partials together again, and window.combine merges them (the global stage)
// and emits exactly what the window would have emitted over the unsalted stream.
import { z } from "zod";
import { mapState, type JsonObject, type JsonValue, type MapState, type Operator, type ProcessContext, type RuntimeContext, type StreamRecord, type TimerFiring } from "../../core/api";
import { defineOperator } from "../../core/spec";
import { SALT_SEPARATOR } from "../keyBy/keyBy";
import { errorRecord } from "../side-outputs";
import { aggregateFunction, type AggregateFunction, type AggregateParams, type Slot } from "./aggregate";
import { aggregateParams, allowedLatenessParam, WINDOW_OUTPUT_FIELDS, windowInputs, windowOutputs } from "./params";
import { cleanupTime } from "./trigger";

/** Fields of a partial aggregate, the local stage's output. */
export const PARTIAL_OUTPUT_FIELDS: readonly string[] = ["key", "subKey", "windowStart", "windowEnd", "partial"];

/** The key a salted sub-key `<value>#<i>` belongs to; an unsalted key is its own. */
export function unsaltedKey(key: string): string {
  const i = key.lastIndexOf(SALT_SEPARATOR);
  return i < 0 || !/^\d+$/.test(key.slice(i + 1)) ? key : key.slice(0, i);
}

/**
 * The local stage's record for one sub-key and window: `partial` is the accumulator (count [n];
 * sum/min/max [x]; avg [sum, n]; distinctCount [the set of distinct values]), mergeable by the
 * global stage. `scratch` is the operator's scratch: copied, never kept.
 */
export function partialRecord(subKey: string, start: number, end: number, agg: AggregateFunction, scratch: readonly Slot[]): JsonObject {
  return { key: unsaltedKey(subKey), subKey, windowStart: start, windowEnd: end, partial: { op: agg.op, acc: scratch.slice(0, agg.width) as JsonValue[] } };
}

/** The `partial` param of the tumbling and hopping windows. */
export const partialParam = () =>
  z
    .boolean()
    .optional()
    .describe(
      "Hot keys, stage 1 of a two-stage aggregation: behind `keyBy { salt }`, emit each sub-key's mergeable partial aggregate `{ key, subKey, windowStart, windowEnd, partial }` (key without the `#i` salt suffix) instead of the result; follow with `keyBy { field: \"key\" }` and `window.combine` with the same aggregate, window and allowedLatenessMs. Default false",
    );

export const PARTIAL_DOCS = `**Hot keys (two-stage aggregation).** Behind \`keyBy { field, salt: n }\` a key is split into n sub-keys
\`<value>#<i>\`. Set \`partial: true\` to pre-aggregate per sub-key and emit the mergeable accumulator
(\`{ key, subKey, windowStart, windowEnd, partial }\`, \`key\` without the salt suffix), then add
\`keyBy { field: "key" }\` and \`window.combine\` with the same \`aggregate\` and \`allowedLatenessMs\`: it merges the
sub-keys' partials and emits what this window would emit over the unsalted stream.`;

export const windowCombineParams = z.strictObject({
  aggregate: aggregateParams.describe("The aggregate of the window upstream (same op and field): it says how to merge the partials"),
  allowedLatenessMs: allowedLatenessParam().describe(
    "The allowed lateness of the window upstream (ms, or e.g. \"1m\"; default 0): a window's partials are kept that long after it fires, so a late re-emitted partial replaces its sub-key's and the result is emitted again",
  ),
});
export type WindowCombineParams = z.infer<typeof windowCombineParams>;

export const windowCombineSpec = defineOperator({
  type: "window.combine",
  version: 1,
  category: "window",
  title: "Combine partial windows",
  summary: "Hot keys: merge the per-sub-key partial aggregates of a salted window into one result per key",
  docs: `The global stage of a two-stage (local-global) aggregation for hot keys, as Flink SQL's
\`table.optimizer.agg-phase-strategy: TWO_PHASE\`:

\`keyBy { field: "merchant", salt: 8 }\` → \`window.tumbling { …, partial: true }\` → \`keyBy { field: "key" }\` → \`window.combine\`

The salted keyBy spreads a busy key over 8 sub-keys (and so up to 8 subtasks); the window pre-aggregates each
sub-key and emits its **partial**: the accumulator, which merges (count and sum add, min and max take the extreme,
avg carries sum and count, distinctCount the set of distinct values, united). Keyed again by the original key, this
operator collects the partials of each window and, when the watermark reaches the window's end − 1 (all partials
of that window are in by then, from every upstream subtask), emits \`{ key, windowStart, windowEnd, value }\` at
end − 1: the same record the window would emit over the unsalted stream. Works behind \`window.tumbling\` and
\`window.hopping\`; session windows cannot be split this way (a sub-key's gaps are not the key's), so salt them not.

**Lateness.** With \`allowedLatenessMs\` (set it as on the window), a late record re-emits its sub-key's updated
partial; it replaces that sub-key's previous one and the window's merged result is emitted again. Partials arriving
after end − 1 + allowedLatenessMs go to \`late\`; records that are not partials of this \`aggregate\` go to \`errors\`.

**Exactness.** Counts, min, max and distinct counts equal the unsalted result exactly; float sums and averages may
differ in the last bits (the additions are grouped differently): aggregate integers (cents) for exact money totals.

**State.** Per key, per window not yet purged: one partial per sub-key (at most \`salt\` of them) and a timer.`,
  params: windowCombineParams,
  inputs: windowInputs,
  outputs: windowOutputs,
  requiresKeyedInput: true,
  stateful: true,
  outputFields: () => WINDOW_OUTPUT_FIELDS,
  stateRetention: (p) => ({ windowMs: p.allowedLatenessMs + 1, freedByTimers: true }),
  create: (p, init) => new WindowCombineOperator(init.nodeId, p.aggregate, p.allowedLatenessMs),
});

/** One window of one key: the partial of each sub-key, and whether it has fired. */
interface CombineWindow extends JsonObject {
  start: number;
  end: number;
  fired: boolean;
  parts: { [subKey: string]: JsonValue[] };
}

const COMBINE_TIMER = "combine";

export class WindowCombineOperator implements Operator {
  private readonly agg: AggregateFunction;
  private readonly scratch: Slot[];
  private state!: MapState<CombineWindow>;

  constructor(
    private readonly nodeId: string,
    aggregate: AggregateParams,
    private readonly allowedLatenessMs: number,
  ) {
    this.agg = aggregateFunction(aggregate);
    this.scratch = new Array<Slot>(this.agg.width).fill(0);
  }

  open(ctx: RuntimeContext): void {
    this.state = ctx.getMapState(mapState<CombineWindow>("combine"));
  }

  processElement(record: StreamRecord, ctx: ProcessContext): void {
    const v = record.value;
    const p = v.partial as { op?: unknown; acc?: unknown } | null | undefined;
    const start = v.windowStart;
    const end = v.windowEnd;
    if (typeof start !== "number" || typeof end !== "number" || typeof p !== "object" || p === null || p.op !== this.agg.op || !Array.isArray(p.acc) || p.acc.length !== this.agg.width) {
      const why = `expected a partial "${this.agg.op}" aggregate { key, subKey, windowStart, windowEnd, partial: { op, acc } } from a window with partial: true and the same aggregate`;
      ctx.sideOutput("errors", errorRecord(this.nodeId, why, v));
      return;
    }
    const wm = ctx.timerService.currentWatermark();
    const purgeAt = cleanupTime(end, this.allowedLatenessMs);
    if (purgeAt <= wm) {
      ctx.sideOutput("late", v);
      return;
    }
    const subKey = typeof v.subKey === "string" ? v.subKey : String(ctx.key);
    const mk = String(end);
    const w: CombineWindow = this.state.get(mk) ?? { start, end, fired: false, parts: {} };
    // The local stage emits its sub-key's whole accumulator each time: replace, never add.
    w.parts[subKey] = p.acc as JsonValue[];
    if (end - 1 <= wm) {
      // Within allowed lateness: fire (again) at once.
      w.fired = true;
      this.emit(w, ctx);
    } else ctx.timerService.registerEventTimeTimer(end - 1, COMBINE_TIMER);
    if (purgeAt !== end - 1) ctx.timerService.registerEventTimeTimer(purgeAt, COMBINE_TIMER);
    this.state.put(mk, w);
  }

  onTimer(timer: TimerFiring, ctx: ProcessContext): void {
    if (timer.domain !== "event" || timer.namespace !== COMBINE_TIMER) return;
    const windows = [...this.state.entries()].sort(([, a], [, b]) => a.end - b.end);
    for (const [mk, w] of windows) {
      if (!w.fired && w.end - 1 <= timer.time) {
        w.fired = true;
        this.emit(w, ctx);
      }
      if (cleanupTime(w.end, this.allowedLatenessMs) <= timer.time) this.state.remove(mk);
      else this.state.put(mk, w);
    }
  }

  /** Merges the sub-keys' partials (in sub-key order, so the result does not depend on arrival order). */
  private emit(w: CombineWindow, ctx: ProcessContext): void {
    const subKeys = Object.keys(w.parts).sort();
    const agg = this.agg;
    subKeys.forEach((sk, i) => {
      const acc = w.parts[sk] as Slot[];
      if (i === 0) agg.copyTo(this.scratch, acc, 0);
      else agg.mergeInto(this.scratch, acc, 0);
    });
    if (subKeys.length === 0) return;
    ctx.output({ key: ctx.key as string, windowStart: w.start, windowEnd: w.end, value: agg.result(this.scratch) }, w.end - 1);
  }
}
