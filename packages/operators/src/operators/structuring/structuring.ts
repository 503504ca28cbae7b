// structuring: splitting a large amount into several transfers each below a reporting threshold
// (the seeds' "three or more incoming transfers today that individually fall below the SAMA
// reporting threshold but collectively exceed it"). Per key and business day it counts and sums
// only the sub-threshold records, alerts once when both the count and the sum are reached, and
// frees the key at the next local midnight.
import { z } from "zod";
import { valueState, type JsonObject, type Operator, type ValueState } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { timeZone } from "../../pipeline/durations";
import { errorRecord, errorsPort } from "../side-outputs";
import { businessDayOf } from "../shared/business-day";
import { appendCapped, evidenceOf, evidenceRef, ID_FIELD_DESCRIPTION, type EvidenceRef } from "../shared/evidence";
import { fieldParamIssues, notANumberMessage, readNumber } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const structuringParams = z.strictObject({
  field: fieldName().describe("Numeric amount field, e.g. \"amount\" (numbers, or decimal strings); a record without it goes to `errors`"),
  below: z.number().describe("Reporting threshold: only records with an amount strictly below this count (e.g. 10000)"),
  countAtLeast: z.number().int().min(1).describe("Least number of sub-threshold records in one business day (e.g. 3)"),
  totalAbove: z.number().describe("Their sum must be strictly greater than this (e.g. 10000, usually the reporting threshold itself)"),
  timeZone: timeZone().describe("IANA time zone of the business day, e.g. \"Asia/Riyadh\"; days start at local midnight"),
  idField: fieldName().default("id").describe(ID_FIELD_DESCRIPTION),
});
export type StructuringParams = z.infer<typeof structuringParams>;

/** A key's sub-threshold activity for one business day. */
interface Day extends JsonObject {
  day: string;
  end: number;
  count: number;
  total: number;
  alerted: boolean;
  refs: EvidenceRef[];
}

const DAY_END_TIMER = "dayEnd";

export const structuringSpec = defineOperator({
  type: "structuring",
  version: 1,
  category: "pattern",
  title: "Structuring",
  summary: "Alert when one business day has several records each below a threshold that together exceed it",
  docs: `Per key and **business day** in \`timeZone\` (local midnight to local midnight, 23 or 25 hours on daylight-saving
days), counts the records whose \`field\` is **< below** and sums their amounts; records at or above \`below\` are
reported by other controls and ignored here. When the day has **≥ countAtLeast** such records whose sum is
**> totalAbove**, it emits once for that key and day:
\`{ key, ts, day, count, total, below, totalAbove, event, evidence }\` — \`event\` is the record that completed the
pattern, \`evidence\` the sub-threshold records of the day (latest 50) with their number.

**Order.** Records are evaluated in event-time order once the watermark passes them, so the alerting record does not
depend on arrival order; late records go to \`late\`, records without a number in \`field\` to \`errors\`.

**State.** Per key with sub-threshold activity today: a count, a sum and up to 50 evidence references, freed by an
event-time timer at the next local midnight.

**Pitfalls.** Splitting across midnight, or across accounts, escapes a per-key daily rule: pair it with a velocity or
a rolling window over the beneficiary. Negative amounts (reversals) below the threshold count and lower the sum.`,
  params: structuringParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "structuring alerts", kind: "keyed", description: "{ key, ts, day, count, total, below, totalAbove, event, evidence }, once per key and day" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }), // at the next local midnight
  check(params, ctx): ParamIssue[] {
    const issues = fieldParamIssues(ctx, [{ param: "field", field: params.field, severity: "error", consequence: "every record would go to errors" }, { param: "idField", field: params.idField, severity: "warning", consequence: "evidence will cite records by timestamp only" }]);
    if (params.totalAbove < params.below) {
      issues.push({ severity: "warning", param: "totalAbove", message: "below `below`: a couple of ordinary payments will alert; structuring rules usually take totalAbove ≥ below" });
    }
    return issues;
  },
  outputFields: () => ["key", "ts", "day", "count", "total", "below", "totalAbove", "event", "evidence"],
  create(params, init): Operator {
    let current: ValueState<Day>;
    return orderedOperator({
      open(ctx) {
        current = ctx.getValueState(valueState<Day>("day"));
      },
      processInOrder(value, ts, ctx) {
        const amount = readNumber(value, params.field);
        if (amount === undefined) {
          ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${notANumberMessage(value, params.field)}`, value), ts);
          return;
        }
        if (amount >= params.below) return;
        let d = current.value();
        if (d === undefined || ts >= d.end) {
          const bd = businessDayOf(ts, params.timeZone);
          d = { day: bd.day, end: bd.end, count: 0, total: 0, alerted: false, refs: [] };
          ctx.timerService.registerEventTimeTimer(bd.end, DAY_END_TIMER);
        }
        if (d.alerted) return; // once per key and day: nothing more to count today
        d = { ...d, count: d.count + 1, total: d.total + amount, refs: appendCapped(d.refs, evidenceRef(value, ts, params.idField)) };
        if (d.count >= params.countAtLeast && d.total > params.totalAbove) {
          ctx.output(
            {
              key: ctx.key ?? null,
              ts,
              day: d.day,
              count: d.count,
              total: d.total,
              below: params.below,
              totalAbove: params.totalAbove,
              event: value,
              evidence: evidenceOf(d.refs, d.count),
            },
            ts,
          );
          d = { ...d, alerted: true, refs: [] };
        }
        current.update(d);
      },
      onTimer(timer) {
        const d = current.value();
        if (d !== undefined && d.end <= timer.time) current.clear();
      },
    });
  },
});
