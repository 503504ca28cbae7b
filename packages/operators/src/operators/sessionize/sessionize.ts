// sessionize: the seeds' hand-written session tracker (pattern 3) — sessions closed by inactivity
// (an event-time timer at last activity + gap) or by a business event (logout, payment completed),
// summarised incrementally (count, counts per type) instead of buffering the session's records.
import { z } from "zod";
import { valueState, type JsonObject, type Operator, type ProcessContext, type ValueState } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { celExpression, fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorsPort } from "../side-outputs";
import { fieldParamIssues, readField } from "../shared/fields";
import { expressionIssues, RecordExpression } from "../shared/expressions";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const sessionizeParams = z.strictObject({
  gapMs: durationMs().describe(
    "Inactivity (ms of event time, or e.g. \"30m\") that closes a session: a record more than gapMs after the previous one starts a new session",
  ),
  closeWhen: celExpression()
    .optional()
    .describe("Optional CEL predicate for a business event that ends the session, itself included, e.g. `action == \"logout\"`"),
  typeField: fieldName().default("type").describe("Field whose value the per-type counts group by. Default \"type\""),
});
export type SessionizeParams = z.infer<typeof sessionizeParams>;

/** The open session of a key: a summary, never the records themselves (the seeds' anti-pattern 2). */
interface Session extends JsonObject {
  start: number;
  last: number;
  count: number;
  countsByType: Record<string, number>;
  /** The registered gap timer (re-armed lazily when it fires early). */
  timerAt: number;
}

/** countsByType key for records without a usable type. */
export const MISSING_TYPE = "(missing)";

const GAP_TIMER = "gap";

export const sessionizeSpec = defineOperator({
  type: "sessionize",
  version: 1,
  category: "pattern",
  title: "Sessionize",
  summary: "Group a key's records into sessions closed by inactivity or by a business event",
  docs: `Per key, records whose timestamps are at most \`gapMs\` apart form one session. A session closes
- by **inactivity**, when the watermark passes *last record + gapMs* (a record exactly \`gapMs\` after the last one
  still joins, as Flink's session windows merge sessions that touch), or
- by a **business event**, when a record matches \`closeWhen\` (that record is the session's last).

On close it emits \`{ key, sessionStart, sessionEnd, count, countsByType, closedBy }\`: the first and last records'
timestamps, the number of records, the counts per value of \`typeField\` (records without one count under
\`"(missing)"\`) and \`"gap"\` or \`"event"\`. A session closed by inactivity is emitted with timestamp
*sessionEnd + gapMs*, one closed by an event with that event's timestamp. At the end of a bounded input every open
session closes.

**Order.** Records are processed in event-time order once the watermark passes them (ties in canonical-JSON order),
so sessions do not depend on arrival order; late records go to \`late\`, a failing \`closeWhen\` to \`errors\` (the
record still counts).

**State.** One summary per key with an open session and its gap timer; a high-cardinality \`typeField\` makes the
summary grow with the distinct types.`,
  params: sessionizeParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "sessions", kind: "keyed", description: "{ key, sessionStart, sessionEnd, count, countsByType, closedBy } per closed session" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }),
  check(params, ctx): ParamIssue[] {
    const typeIssues = fieldParamIssues(ctx, [{ param: "typeField", field: params.typeField, severity: "warning", consequence: "every record would count as \"(missing)\"" }]);
    return params.closeWhen === undefined ? typeIssues : [...expressionIssues(params.closeWhen, "closeWhen", ctx), ...typeIssues];
  },
  outputFields: () => ["key", "sessionStart", "sessionEnd", "count", "countsByType", "closedBy"],
  create(params, init): Operator {
    const closeWhen = params.closeWhen === undefined ? undefined : new RecordExpression(params.closeWhen, init.nodeId, "closeWhen");
    let session: ValueState<Session>;

    const emit = (s: Session, closedBy: "gap" | "event", ts: number, ctx: ProcessContext): void => {
      ctx.output(
        { key: ctx.key ?? null, sessionStart: s.start, sessionEnd: s.last, count: s.count, countsByType: s.countsByType, closedBy },
        ts,
      );
    };

    return orderedOperator({
      open(ctx) {
        session = ctx.getValueState(valueState<Session>("session"));
      },
      processInOrder(value, ts, ctx) {
        const typeValue = readField(value, params.typeField);
        const type = typeof typeValue === "string" || typeof typeValue === "number" || typeof typeValue === "boolean" ? String(typeValue) : MISSING_TYPE;
        let s = session.value();
        // The gap timer (fired in time order, re-armed lazily) has normally closed such a session
        // already; the rule is checked here too so that it does not hinge on timer bookkeeping.
        if (s !== undefined && ts - s.last > params.gapMs) {
          emit(s, "gap", s.last + params.gapMs, ctx);
          s = undefined;
        }
        if (s === undefined) {
          const timerAt = ts + params.gapMs;
          s = { start: ts, last: ts, count: 0, countsByType: {}, timerAt };
          ctx.timerService.registerEventTimeTimer(timerAt, GAP_TIMER);
        }
        const countsByType = { ...s.countsByType, [type]: (s.countsByType[type] ?? 0) + 1 };
        s = { ...s, last: ts, count: s.count + 1, countsByType };
        if (closeWhen !== undefined && closeWhen.test(value, ts, ctx) === true) {
          ctx.timerService.deleteEventTimeTimer(s.timerAt, GAP_TIMER);
          session.clear();
          emit(s, "event", ts, ctx);
          return;
        }
        session.update(s);
      },
      onTimer(timer, ctx) {
        const s = session.value();
        if (s === undefined || s.timerAt !== timer.time) return;
        if (s.last + params.gapMs <= timer.time) {
          session.clear();
          emit(s, "gap", timer.time, ctx);
        } else {
          // The session was extended since this timer was registered: one timer per key, moved on firing.
          const timerAt = s.last + params.gapMs;
          ctx.timerService.registerEventTimeTimer(timerAt, GAP_TIMER);
          session.update({ ...s, timerAt });
        }
      },
    });
  },
});
