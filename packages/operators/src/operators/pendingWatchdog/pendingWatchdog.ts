// pendingWatchdog: tracks opened items (orders, transfers, authorisations) until they are closed,
// the seeds' fourth anti-pattern fixed. The seeds' PendingOrders kept a map of pending ids that a
// lost COMPLETED event left in state for ever (TTL does not help: every new event of the key
// refreshes it). Here every opened item gets its own event-time deadline timer; an item not closed
// by then is emitted on `expired` and removed, a closed one has its timer deleted and its entry removed.
import { z } from "zod";
import { mapState, type JsonObject, type JsonValue, type MapState, type Operator, type ProcessContext } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { celExpression, fieldName } from "../../expr/params";
import { durationMs } from "../../pipeline/durations";
import { errorRecord, errorsPort } from "../side-outputs";
import { evidenceOf, evidenceRef } from "../shared/evidence";
import { fieldParamIssues, readField } from "../shared/fields";
import { expressionIssues, RecordExpression } from "../shared/expressions";
import { latePort, orderedOperator } from "../shared/ordered-input";

export const pendingWatchdogParams = z.strictObject({
  idField: fieldName().describe("Field identifying an item across its open and close records, e.g. \"orderId\""),
  openWhen: celExpression().describe("CEL predicate of a record that opens an item, e.g. `status == \"PENDING\"`"),
  closeWhen: celExpression().describe("CEL predicate of a record that closes it, e.g. `status in [\"COMPLETED\", \"CANCELLED\"]`"),
  deadlineMs: durationMs().describe("How long (ms of event time, or e.g. \"24h\") an item may stay open; a close exactly at the deadline is in time"),
});
export type PendingWatchdogParams = z.infer<typeof pendingWatchdogParams>;

/** An open item. */
interface Item extends JsonObject {
  id: string | number | boolean;
  openedAt: number;
  deadline: number;
  event: JsonObject;
}

/** Each item has its own timer namespace, so closing one item deletes exactly its timer. */
const TIMER_PREFIX = "deadline:";

/** The map key of an item id: its JSON, so 42 and "42" stay different items. */
const itemKey = (id: string | number | boolean): string => JSON.stringify(id);

export const pendingWatchdogSpec = defineOperator({
  type: "pendingWatchdog",
  version: 1,
  category: "pattern",
  title: "Pending watchdog",
  summary: "Emit items opened but not closed before their deadline; never keep them for ever",
  docs: `Per key, a record matching \`openWhen\` opens the item named by its \`idField\` at its event time *t*, with a
deadline *t + deadlineMs*. A record matching \`closeWhen\` for an open item at or before its deadline closes it and emits
\`{ key, id, openedAt, closedAt, durationMs, event }\` on the main output. When the watermark passes the deadline of an
item still open, it is emitted on \`expired\` as \`{ key, id, openedAt, deadline, event, evidence }\` (\`event\` is the
opening record) and removed.

- Opening an item that is already open changes nothing (a redelivered PENDING does not push its deadline back).
- A close for an item that is not open (never opened, already expired) is ignored. A record matching both
  predicates closes its item if open, otherwise opens it.
- Records are evaluated in event-time order once the watermark passes them, so a close that arrives before its open
  (within the out-of-orderness bound) still closes it. Late records go to \`late\`; a failing predicate, or a matching
  record without a scalar \`idField\`, to \`errors\`.

**State.** One entry per open item and one timer each; both are gone at close or at the deadline, so state is bounded
by the items opened within the last \`deadlineMs\` — the seeds' unbounded pending map cannot happen. Deadlines are
event time: replays give the same expiries, and a stalled source delays them (see the source's idle timeout).`,
  params: pendingWatchdogParams,
  inputs: [{ id: "in", label: "keyed records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "closed", kind: "keyed", description: "{ key, id, openedAt, closedAt, durationMs, event } for items closed in time" },
    { id: "expired", label: "expired", kind: "keyed", side: true, description: "{ key, id, openedAt, deadline, event, evidence } for items not closed by their deadline" },
    latePort(),
    errorsPort(),
  ],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }),
  check(params, ctx): ParamIssue[] {
    return [
      ...expressionIssues(params.openWhen, "openWhen", ctx),
      ...expressionIssues(params.closeWhen, "closeWhen", ctx),
      ...fieldParamIssues(ctx, [{ param: "idField", field: params.idField, severity: "error", consequence: "opening records would go to errors" }]),
    ];
  },
  outputFields: () => ["key", "id", "openedAt", "closedAt", "durationMs", "event"],
  create(params, init): Operator {
    const openWhen = new RecordExpression(params.openWhen, init.nodeId, "openWhen");
    const closeWhen = new RecordExpression(params.closeWhen, init.nodeId, "closeWhen");
    let items: MapState<Item>;

    /** The record's item id, or undefined after sending it to `errors`. */
    const idOf = (value: JsonObject, ts: number, ctx: ProcessContext): string | number | boolean | undefined => {
      const id: JsonValue | undefined = readField(value, params.idField);
      if (typeof id === "string" || typeof id === "boolean" || (typeof id === "number" && Number.isFinite(id))) return id;
      const what = id === undefined ? "is missing from the record" : `is ${JSON.stringify(id)}, not a string, number or boolean`;
      ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": field "${params.idField}" ${what}`, value), ts);
      return undefined;
    };

    return orderedOperator({
      open(ctx) {
        items = ctx.getMapState(mapState<Item>("items"));
      },
      processInOrder(value, ts, ctx) {
        const isClose = closeWhen.test(value, ts, ctx);
        if (isClose === undefined) return;
        if (isClose) {
          const id = idOf(value, ts, ctx);
          if (id === undefined) return;
          const item = items.get(itemKey(id));
          if (item !== undefined) {
            // Records reach us in timestamp order and a deadline releases records at its time first,
            // so an open item seen here is closed at or before its deadline.
            items.remove(itemKey(id));
            ctx.timerService.deleteEventTimeTimer(item.deadline, TIMER_PREFIX + itemKey(id));
            ctx.output({ key: ctx.key ?? null, id, openedAt: item.openedAt, closedAt: ts, durationMs: ts - item.openedAt, event: value }, ts);
            return;
          }
        }
        const isOpen = openWhen.test(value, ts, ctx);
        if (!isOpen) return;
        const id = idOf(value, ts, ctx);
        if (id === undefined || items.contains(itemKey(id))) return;
        const deadline = ts + params.deadlineMs;
        items.put(itemKey(id), { id, openedAt: ts, deadline, event: value });
        ctx.timerService.registerEventTimeTimer(deadline, TIMER_PREFIX + itemKey(id));
      },
      onTimer(timer, ctx) {
        if (!timer.namespace.startsWith(TIMER_PREFIX)) return;
        const key = timer.namespace.slice(TIMER_PREFIX.length);
        const item = items.get(key);
        if (item === undefined || item.deadline !== timer.time) return;
        items.remove(key);
        ctx.sideOutput(
          "expired",
          {
            key: ctx.key ?? null,
            id: item.id,
            openedAt: item.openedAt,
            deadline: item.deadline,
            event: item.event,
            evidence: evidenceOf([evidenceRef(item.event, item.openedAt, params.idField)]),
          },
          timer.time,
        );
      },
    });
  },
});
