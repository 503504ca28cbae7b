// dailyTotal: a per-key sum over the business day in the institution's time zone, with one alert
// when it crosses a limit — the seeds' AccountBalanceMonitor, which alerted on every record above
// the limit and never reset. Day boundaries come from the IANA zone (DST days are 23 h or 25 h),
// and an event-time timer at the next local midnight frees the key.
import { z } from "zod";
import { valueState, type JsonObject, type Operator, type ValueState } from "../../core/api";
import { defineOperator } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { timeZone } from "../../pipeline/durations";
import { errorRecord, errorsPort } from "../side-outputs";
import { businessDayOf } from "../shared/business-day";
import { appendCapped, evidenceOf, evidenceRef, ID_FIELD_DESCRIPTION, type EvidenceRef } from "../shared/evidence";
import { fieldParamIssues, notANumberMessage, readNumber } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const dailyTotalParams = z.strictObject({
  field: fieldName().describe("Numeric field to sum, e.g. \"amount\" (numbers, or decimal strings such as \"125.50\"); a record without it goes to `errors`"),
  limit: z.number().describe("Alert once per key and day when the day's sum becomes strictly greater than this (in the field's unit)"),
  timeZone: timeZone().describe("IANA time zone of the business day, e.g. \"Asia/Riyadh\" or \"America/New_York\"; days start at local midnight"),
  idField: fieldName().default("id").describe(ID_FIELD_DESCRIPTION),
});
export type DailyTotalParams = z.infer<typeof dailyTotalParams>;

/** A key's running day. */
interface Day extends JsonObject {
  day: string;
  start: number;
  end: number;
  total: number;
  count: number;
  alerted: boolean;
  refs: EvidenceRef[];
}

const DAY_END_TIMER = "dayEnd";

export const dailyTotalSpec = defineOperator({
  type: "dailyTotal",
  version: 1,
  category: "pattern",
  title: "Daily total",
  summary: "Sum a field per key and business day; alert once when the day's sum crosses a limit",
  docs: `Sums \`field\` per key over the **business day** in \`timeZone\`: from local midnight to the next local midnight,
found with the zone's rules, so a daylight-saving day lasts 23 or 25 hours (America/New_York's 2026-03-08 and
2026-11-01) and a zone whose clocks skip midnight starts its day at 01:00.

The first time a key's sum for the day becomes **> limit** it emits
\`{ key, ts, day, total, limit, count, event, evidence }\` (\`day\` is the local date \`YYYY-MM-DD\`, \`event\` the record
that crossed, \`evidence\` the day's records, latest 50, with their total). Later records that day do not alert again;
the sum starts from zero at the next local midnight.

**Order.** Records are summed in event-time order once the watermark passes them, so the crossing record does not
depend on arrival order; late records go to \`late\`, records without a number in \`field\` to \`errors\`.

**State.** One running day per active key, freed by an event-time timer at the next local midnight: keys quiet
today hold nothing.

**Pitfalls.** The day is the institution's (\`timeZone\`), not the cardholder's. A burst that straddles midnight is
split across two days and may stay under the limit in both: pair the daily limit with a \`velocity\` rule.`,
  params: dailyTotalParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "limit alerts", kind: "keyed", description: "{ key, ts, day, total, limit, count, event, evidence }, once per key and day" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }), // at the next local midnight
  check: (params, ctx) =>
    fieldParamIssues(ctx, [{ param: "field", field: params.field, severity: "error", consequence: "every record would go to errors" }, { param: "idField", field: params.idField, severity: "warning", consequence: "evidence will cite records by timestamp only" }]),
  outputFields: () => ["key", "ts", "day", "total", "limit", "count", "event", "evidence"],
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
        let d = current.value();
        if (d === undefined || ts >= d.end) {
          const bd = businessDayOf(ts, params.timeZone);
          d = { day: bd.day, start: bd.start, end: bd.end, total: 0, count: 0, alerted: false, refs: [] };
          ctx.timerService.registerEventTimeTimer(bd.end, DAY_END_TIMER);
        }
        const ref = evidenceRef(value, ts, params.idField);
        // Evidence is only kept until the alert: after it, nothing will quote it today.
        d = { ...d, total: d.total + amount, count: d.count + 1, refs: d.alerted ? [] : appendCapped(d.refs, ref) };
        if (!d.alerted && d.total > params.limit) {
          ctx.output(
            { key: ctx.key ?? null, ts, day: d.day, total: d.total, limit: params.limit, count: d.count, event: value, evidence: evidenceOf(d.refs, d.count) },
            ts,
          );
          d = { ...d, alerted: true, refs: [] };
        }
        current.update(d);
      },
      onTimer(timer) {
        // Records at exactly midnight were released first and opened the next day: keep that one.
        const d = current.value();
        if (d !== undefined && d.end <= timer.time) current.clear();
      },
    });
  },
});
