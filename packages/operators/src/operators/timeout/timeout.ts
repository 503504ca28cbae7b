// timeout: "a login not followed by a transaction within 5 minutes" — the seeds' LoginTimeoutDetector
// with its bug fixed (a second login overwrote the first while the first one's timer still fired).
// One pending start per key, one event-time deadline timer for it; the state is cleared when an
// end resolves it or when the alert fires, so nothing outlives its deadline.
import { z } from "zod";
import { valueState, type JsonObject, type Operator, type ValueState } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { celExpression, fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorsPort } from "../side-outputs";
import { appendCapped, evidenceOf, evidenceRef, ID_FIELD_DESCRIPTION, type EvidenceRef } from "../shared/evidence";
import { expressionIssues, RecordExpression } from "../shared/expressions";
import { fieldParamIssues } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const timeoutParams = z.strictObject({
  startWhen: celExpression().describe("CEL predicate that starts the clock, e.g. `action == \"login\"`"),
  endWhen: celExpression().describe("CEL predicate that stops it in time, e.g. `action == \"transaction\"`"),
  afterMs: durationMs().describe("How long (ms of event time, or e.g. \"5m\") an end may take after the start; an end exactly afterMs later is in time"),
  idField: fieldName().default("id").describe(ID_FIELD_DESCRIPTION),
});
export type TimeoutParams = z.infer<typeof timeoutParams>;

/** The start waiting for its end. */
interface Pending extends JsonObject {
  startedAt: number;
  deadline: number;
  event: JsonObject;
  /** The starts seen while waiting (the first one included), for the evidence. */
  starts: EvidenceRef[];
  startCount: number;
}

const DEADLINE_TIMER = "deadline";

export const timeoutSpec = defineOperator({
  type: "timeout",
  version: 1,
  category: "pattern",
  title: "Timeout",
  summary: "Alert when a start event is not followed by an end event in time",
  docs: `Per key, a record matching \`startWhen\` at time *t₀* starts a clock; a record matching \`endWhen\` with a timestamp in
**[t₀, t₀ + afterMs]** resolves it silently. Otherwise, when the watermark passes *t₀ + afterMs*, the node emits
\`{ key, ts, type: "TIMEOUT", startedAt, afterMs, event, evidence }\` (\`event\` is the start record; \`evidence\`
lists the starts seen while waiting) and forgets the key.

- The clock runs from the **first** unanswered start: more starts before the end do not push the deadline back
  (they appear in the evidence instead). A record matching both predicates resolves a pending start, else starts one.
- Records are evaluated in event-time order once the watermark passes them, so an end that arrives before its start
  (out of order, within the bound) still resolves it; late records go to \`late\`, failing predicates to \`errors\`.
- Ends with no pending start are ignored. An end stamped at the same millisecond as its start counts only if it sorts
  after it (canonical JSON), so give starts and ends distinct timestamps when that matters.

**State.** One pending start per key (with at most 50 evidence references) and its deadline timer; cleared on
resolution and on alert. Deadlines are event time: a stalled source delays them (see the source's idle timeout).`,
  params: timeoutParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "timeouts", kind: "keyed", description: "{ key, ts, type: \"TIMEOUT\", startedAt, afterMs, event, evidence } per start not ended in time" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }),
  check(params, ctx): ParamIssue[] {
    return [...expressionIssues(params.startWhen, "startWhen", ctx), ...expressionIssues(params.endWhen, "endWhen", ctx), ...fieldParamIssues(ctx, [{ param: "idField", field: params.idField, severity: "warning", consequence: "evidence will cite records by timestamp only" }])];
  },
  outputFields: () => ["key", "ts", "type", "startedAt", "afterMs", "event", "evidence"],
  create(params, init): Operator {
    const startWhen = new RecordExpression(params.startWhen, init.nodeId, "startWhen");
    const endWhen = new RecordExpression(params.endWhen, init.nodeId, "endWhen");
    let pending: ValueState<Pending>;
    return orderedOperator({
      open(ctx) {
        pending = ctx.getValueState(valueState<Pending>("pending"));
      },
      processInOrder(value, ts, ctx) {
        const current = pending.value();
        if (current !== undefined) {
          const isEnd = endWhen.test(value, ts, ctx);
          if (isEnd === undefined) return;
          // Records arrive in timestamp order and the deadline timer releases records at its time
          // first, so an end seen here is within [startedAt, deadline].
          if (isEnd) {
            ctx.timerService.deleteEventTimeTimer(current.deadline, DEADLINE_TIMER);
            pending.clear();
            return;
          }
        }
        const isStart = startWhen.test(value, ts, ctx);
        if (!isStart) return;
        const ref = evidenceRef(value, ts, params.idField);
        if (current === undefined) {
          const deadline = ts + params.afterMs;
          pending.update({ startedAt: ts, deadline, event: value, starts: [ref], startCount: 1 });
          ctx.timerService.registerEventTimeTimer(deadline, DEADLINE_TIMER);
        } else {
          pending.update({ ...current, starts: appendCapped(current.starts, ref), startCount: current.startCount + 1 });
        }
      },
      onTimer(timer, ctx) {
        const current = pending.value();
        if (current === undefined || current.deadline !== timer.time) return;
        pending.clear();
        ctx.output(
          {
            key: ctx.key ?? null,
            ts: timer.time,
            type: "TIMEOUT",
            startedAt: current.startedAt,
            afterMs: params.afterMs,
            event: current.event,
            evidence: evidenceOf(current.starts, current.startCount),
          },
          timer.time,
        );
      },
    });
  },
});
