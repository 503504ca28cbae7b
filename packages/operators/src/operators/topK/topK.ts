// topK: the k most frequent values of a field per key (a card's top merchants, an account's top
// countries), kept incrementally: a MapState of counts plus the current top list, updated in
// O(k) per record instead of the seeds' O(distinct values) heap rebuild (pattern 4's pitfall).
import { z } from "zod";
import {
  mapState,
  valueState,
  type JsonObject,
  type JsonValue,
  type MapState,
  type Operator,
  type ValueState,
} from "../../core/api";
import { defineOperator } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorRecord, errorsPort } from "../side-outputs";
import { fieldParamIssues, readField } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const topKParams = z.strictObject({
  field: fieldName().describe("Field whose values are counted, e.g. \"merchantId\"; a record without a scalar value there goes to `errors`"),
  k: z.number().int().min(1).max(1_000).describe("How many of the most frequent values to report (1–1000)"),
  ttlMs: durationMs()
    .optional()
    .describe("Optional: forget a key's counts after this long (ms of event time, or e.g. \"30d\") without records; unset keeps them for ever"),
});
export type TopKParams = z.infer<typeof topKParams>;

/** One ranked value. */
export interface RankedValue extends JsonObject {
  value: string | number | boolean;
  count: number;
}

/** Stable identity of a value in the counts map: its JSON, so 1 and "1" stay apart. */
const idOf = (value: JsonValue): string => JSON.stringify(value);

/** Ranking order: higher count first, then the value's JSON ascending (deterministic ties). */
function compareRanked(a: RankedValue, b: RankedValue): number {
  if (a.count !== b.count) return b.count - a.count;
  const ia = idOf(a.value);
  const ib = idOf(b.value);
  return ia < ib ? -1 : ia > ib ? 1 : 0;
}

const EXPIRY_TIMER = "expiry";

export const topKSpec = defineOperator({
  type: "topK",
  version: 1,
  category: "pattern",
  title: "Top K",
  summary: "The k most frequent values of a field per key, updated incrementally",
  docs: `Counts, per key, how often each value of \`field\` occurs, and keeps the **k** most frequent (ties broken by the
value's JSON, ascending, so the ranking is deterministic). It emits \`{ key, ts, topK: [{ value, count }], total, event }\`
**when the ranking changes** — a value enters, leaves or moves — not on every record: a count that grows without
changing the order is not reported. \`total\` is the number of records counted for the key, \`event\` the record that
changed the ranking.

**Order.** Records are counted in event-time order once the watermark passes them, so the sequence of rankings does
not depend on arrival order; late records go to \`late\`, records without a scalar \`field\` to \`errors\`.

**State.** One count per distinct value per key, plus the current top list; each record costs O(k), never a scan of
all counts. Without \`ttlMs\` the counts live for ever: a high-cardinality field over many keys grows without bound,
so set a TTL (an event-time timer frees a key silent for that long).`,
  params: topKParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "rankings", kind: "keyed", description: "{ key, ts, topK: [{ value, count }], total, event } whenever a key's ranking changes" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: (params) => (params.ttlMs === undefined ? { freedByTimers: false } : { ttlMs: params.ttlMs, ttlParam: "ttlMs", freedByTimers: true }),
  check: (params, ctx) => fieldParamIssues(ctx, [{ param: "field", field: params.field, severity: "error", consequence: "every record would go to errors" }]),
  outputFields: () => ["key", "ts", "topK", "total", "event"],
  create(params, init): Operator {
    let counts: MapState<number>;
    let top: ValueState<RankedValue[]>;
    let total: ValueState<number>;
    /** Last record time and the pending expiry timer, only with a TTL. */
    let expiry: ValueState<{ last: number; timerAt: number }>;
    return orderedOperator({
      open(ctx) {
        counts = ctx.getMapState(mapState<number>("counts"));
        top = ctx.getValueState(valueState<RankedValue[]>("top"));
        total = ctx.getValueState(valueState<number>("total"));
        expiry = ctx.getValueState(valueState<{ last: number; timerAt: number }>("expiry"));
      },
      processInOrder(value, ts, ctx) {
        const v = readField(value, params.field);
        if (typeof v !== "string" && typeof v !== "boolean" && (typeof v !== "number" || !Number.isFinite(v))) {
          const what = v === undefined ? "is missing from the record" : `is ${JSON.stringify(v)}, not a string, number or boolean`;
          ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": field "${params.field}" ${what}`, value), ts);
          return;
        }
        const e0 = params.ttlMs === undefined ? undefined : expiry.value();
        if (params.ttlMs !== undefined && e0 !== undefined && ts - e0.last > params.ttlMs) {
          // Silent for longer than the TTL, but the (lazily re-armed) timer has not fired yet.
          counts.clear();
          top.clear();
          total.clear();
        }
        const id = idOf(v);
        const count = (counts.get(id) ?? 0) + 1;
        counts.put(id, count);
        const n = (total.value() ?? 0) + 1;
        total.update(n);

        // Only v's count changed, and only upwards: the new top-k is the top-k of (old top-k ∪ {v}).
        const before = top.value() ?? [];
        const entry: RankedValue = { value: v, count };
        const at = before.findIndex((e) => idOf(e.value) === id);
        let after: RankedValue[];
        if (at >= 0) after = before.map((e, i) => (i === at ? entry : e)).sort(compareRanked);
        else if (before.length < params.k) after = [...before, entry].sort(compareRanked);
        else {
          const last = before[before.length - 1] as RankedValue;
          after = compareRanked(entry, last) < 0 ? [...before.slice(0, -1), entry].sort(compareRanked) : before;
        }
        if (after !== before) top.update(after);
        const changed = after.length !== before.length || after.some((e, i) => idOf(e.value) !== idOf((before[i] as RankedValue).value));
        if (changed) ctx.output({ key: ctx.key ?? null, ts, topK: after, total: n, event: value }, ts);

        if (params.ttlMs !== undefined) {
          const e = expiry.value();
          if (e === undefined) {
            const timerAt = ts + params.ttlMs;
            ctx.timerService.registerEventTimeTimer(timerAt, EXPIRY_TIMER);
            expiry.update({ last: ts, timerAt });
          } else expiry.update({ last: ts, timerAt: e.timerAt });
        }
      },
      onTimer(timer, ctx) {
        const ttlMs = params.ttlMs;
        const e = expiry.value();
        if (ttlMs === undefined || e === undefined || e.timerAt !== timer.time) return;
        if (e.last + ttlMs <= timer.time) {
          counts.clear();
          top.clear();
          total.clear();
          expiry.clear();
        } else {
          // Re-armed on firing rather than on every record: one timer per key.
          const timerAt = e.last + ttlMs;
          ctx.timerService.registerEventTimeTimer(timerAt, EXPIRY_TIMER);
          expiry.update({ last: e.last, timerAt });
        }
      },
    });
  },
});
