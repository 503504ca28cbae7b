// threshold: an alert with hysteresis — the seeds' two-state FSM (normal / alerting). One
// THRESHOLD_EXCEEDED when a key's value rises above `above`, one RECOVERED when it falls below
// `recoverBelow`; the gap between the two keeps a value hovering at the line from flapping.
// Records are evaluated in event-time order, so the transitions do not depend on arrival order.
import { z } from "zod";
import { valueState, type JsonObject, type Operator, type ValueState } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { celExpression, fieldName } from "../../expr/params";
import { errorsPort } from "../side-outputs";
import { evidenceOf, evidenceRef, ID_FIELD_DESCRIPTION, type EvidenceRef } from "../shared/evidence";
import { expressionIssues, RecordExpression } from "../shared/expressions";
import { fieldParamIssues } from "../shared/fields";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const thresholdParams = z
  .strictObject({
    expression: celExpression().describe(
      "CEL expression giving the monitored number for each record, e.g. `amount` or `riskScore * 100`; a record on which it fails or is not a number goes to `errors`",
    ),
    above: z.number().describe("Raise THRESHOLD_EXCEEDED when the value is strictly greater than this (in the expression's unit)"),
    recoverBelow: z
      .number()
      .describe("Raise RECOVERED when, after an alert, the value is strictly less than this; at most `above` (equal means no hysteresis)"),
    idField: fieldName().default("id").describe(ID_FIELD_DESCRIPTION),
  })
  .refine((p) => p.recoverBelow <= p.above, {
    path: ["recoverBelow"],
    error: "must be at most `above`: a key recovers below a lower line than the one it alerted above",
  });
export type ThresholdParams = z.infer<typeof thresholdParams>;

/** Present only while the key is alerting: the record that raised the alert. */
interface Alerting extends JsonObject {
  since: number;
  value: number;
  ref: EvidenceRef;
}

export const thresholdSpec = defineOperator({
  type: "threshold",
  version: 1,
  category: "pattern",
  title: "Threshold with hysteresis",
  summary: "One alert when a value rises above a line, one recovery when it falls below a lower one",
  docs: `Evaluates \`expression\` on each record of a key, in event-time order, and runs a two-state machine:

- **normal → alerting** when the value is **> above**: emits \`{ key, ts, type: "THRESHOLD_EXCEEDED", value, above, event, evidence }\`.
- **alerting → normal** when the value is **< recoverBelow**: emits \`{ key, ts, type: "RECOVERED", value, recoverBelow,
  exceededAt, event, evidence }\`, whose evidence holds the record that raised the alert and the one that ended it.

Values between the two lines change nothing, so a value oscillating around \`above\` alerts once, not on every
crossing (flapping). \`recoverBelow\` must be at most \`above\`.

**Order.** Records wait until the watermark passes them and are evaluated in timestamp order (ties in canonical-JSON
order), so the transitions are the same for any arrival order within the out-of-orderness bound; late records go to
\`late\`. Expression failures and non-numeric results go to \`errors\` with the reason.

**State.** Nothing for a key in the normal state; one small entry while it is alerting (so a key that alerts and
never recovers keeps it), plus the records waiting for the watermark.`,
  params: thresholdParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "transitions", kind: "keyed", description: "THRESHOLD_EXCEEDED and RECOVERED alerts with their evidence" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: false }), // a key that alerts and never recovers keeps its entry
  check(params, ctx): ParamIssue[] {
    const issues = [...expressionIssues(params.expression, "expression", ctx), ...fieldParamIssues(ctx, [{ param: "idField", field: params.idField, severity: "warning", consequence: "evidence will cite records by timestamp only" }])];
    if (params.recoverBelow === params.above) {
      issues.push({ severity: "warning", param: "recoverBelow", message: "equal to `above`: no hysteresis, so a value hovering at the line alerts on every crossing" });
    }
    return issues;
  },
  outputFields: () => ["key", "ts", "type", "value", "above", "recoverBelow", "exceededAt", "event", "evidence"],
  create(params, init): Operator {
    const expression = new RecordExpression(params.expression, init.nodeId, "expression");
    let alerting: ValueState<Alerting>;
    return orderedOperator({
      open(ctx) {
        alerting = ctx.getValueState(valueState<Alerting>("alerting"));
      },
      processInOrder(value, ts, ctx) {
        const v = expression.number(value, ts, ctx);
        if (v === undefined) return;
        const state = alerting.value();
        const ref = evidenceRef(value, ts, params.idField);
        if (state === undefined) {
          if (v > params.above) {
            alerting.update({ since: ts, value: v, ref });
            ctx.output({ key: ctx.key ?? null, ts, type: "THRESHOLD_EXCEEDED", value: v, above: params.above, event: value, evidence: evidenceOf([ref]) }, ts);
          }
        } else if (v < params.recoverBelow) {
          alerting.clear();
          ctx.output(
            {
              key: ctx.key ?? null,
              ts,
              type: "RECOVERED",
              value: v,
              recoverBelow: params.recoverBelow,
              exceededAt: state.since,
              event: value,
              evidence: evidenceOf([state.ref, ref]),
            },
            ts,
          );
        }
      },
    });
  },
});
