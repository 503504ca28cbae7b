// enrich.broadcast: Flink's broadcast-state pattern (KeyedBroadcastProcessFunction). A slowly
// changing reference stream (merchant categories, risk tiers) is broadcast to every subtask and
// kept in operator state; each main record is enriched in-process with the latest reference
// record for its key: no lookup latency, no network hop.
import { z } from "zod";
import type { JsonObject, JsonValue, Operator } from "../../core/api";
import { defineOperator } from "../../core/spec";
import { errorRecord, errorsPort } from "../side-outputs";
import { enriched, enrichedFields, joinKeyOf, joinParams, missPort } from "../shared/enrichment";
import { fieldParamIssues, isJsonObject } from "../shared/fields";

export const enrichBroadcastParams = z.strictObject(joinParams);
export type EnrichBroadcastParams = z.infer<typeof enrichBroadcastParams>;

/** The current reference record of one key and the event time it arrived with. */
interface Current {
  ts: number;
  value: JsonObject;
}

export const enrichBroadcastSpec = defineOperator({
  type: "enrich.broadcast",
  version: 1,
  category: "enrichment",
  title: "Enrich (broadcast)",
  summary: "Join each record with the latest reference record for its key, from a broadcast reference stream",
  docs: `Connect a reference stream (e.g. merchant categories) to the \`reference\` input. Every reference record replaces the
one held for its \`referenceKeyField\`, unless it carries an **older** event time (an out-of-order update never
rolls the table back). Each main record is then emitted with \`<targetField>\` = the current reference record for its
\`keyField\` and \`<targetField>Version\` = that record's event time, so an analyst can see which version was used.

**Misses.** With \`onMiss: "miss-port"\` (default) a main record with no reference data goes, unchanged, to \`miss\`;
with \`"pass-with-nulls"\` it is emitted with nulls. A record without a usable key field goes to \`errors\`.

**State.** The whole reference table, once per subtask (operator state, snapshotted with the job): keep it to
reference data that fits in memory — thousands to a few million small records.

**Pitfalls.** The result depends on how the two inputs interleave: a payment that arrives before the reference
record it needs misses, even when that reference record is older in event time. The runner reads a bounded
reference source (a file) to its end before it starts the other sources; with an unbounded one (Kafka), start it
first and route \`miss\` somewhere it can be replayed, or use \`enrich.temporal\`, which joins on event time and
is reproducible for audit.`,
  params: enrichBroadcastParams,
  inputs: [
    { id: "in", label: "records", accepts: ["stream", "keyed"], required: true },
    {
      id: "reference",
      label: "reference",
      accepts: ["reference", "stream", "keyed"],
      required: true,
      description: "The reference stream, broadcast to every subtask",
    },
  ],
  outputs: [
    { id: "out", label: "enriched", kind: "same", description: "Main records with <targetField> and <targetField>Version added" },
    missPort(),
    errorsPort(),
  ],
  requiresKeyedInput: false,
  stateful: true,
  stateRetention: () => ({ freedByTimers: true }), // no keyed state: the table is operator state
  // The reference records' fields are not known here (inputFields describes the main input).
  check: (params, ctx) => fieldParamIssues(ctx, [{ param: "keyField", field: params.keyField, severity: "error", consequence: "every record would go to errors" }]),
  outputFields: (params, inputFields) => enrichedFields(inputFields, params.targetField),
  create(params, init): Operator {
    /** Operator state: the broadcast table, identical on every subtask. */
    let table = new Map<string, Current>();
    return {
      processElement(record, ctx) {
        if (ctx.inputPort === "reference") {
          const key = joinKeyOf(record.value, params.referenceKeyField, "reference");
          if (key instanceof Error) {
            ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${key.message}`, record.value));
            return;
          }
          const held = table.get(key);
          if (held === undefined || held.ts <= record.timestamp) table.set(key, { ts: record.timestamp, value: record.value });
          return;
        }
        const key = joinKeyOf(record.value, params.keyField, "main");
        if (key instanceof Error) {
          ctx.sideOutput("errors", errorRecord(init.nodeId, `node "${init.nodeId}": ${key.message}`, record.value));
          return;
        }
        const current = table.get(key);
        if (current !== undefined) ctx.output(enriched(record.value, params.targetField, current.value, current.ts));
        else if (params.onMiss === "pass-with-nulls") ctx.output(enriched(record.value, params.targetField, null, null));
        else ctx.sideOutput("miss", record.value);
      },
      snapshotState(): JsonValue {
        // Sorted, so equal tables give equal snapshot bytes whatever their history.
        return [...table.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, c]) => [k, c.ts, c.value]);
      },
      restoreState(state: JsonValue): void {
        const restored = new Map<string, Current>();
        if (!Array.isArray(state)) throw new Error(`node "${init.nodeId}": enrich.broadcast snapshot is not a list of reference records`);
        for (const entry of state) {
          if (!Array.isArray(entry)) throw new Error(`node "${init.nodeId}": malformed enrich.broadcast snapshot entry`);
          const [k, ts, value] = entry;
          if (typeof k !== "string" || typeof ts !== "number" || !isJsonObject(value)) {
            throw new Error(`node "${init.nodeId}": malformed enrich.broadcast snapshot entry ${JSON.stringify(entry)}`);
          }
          restored.set(k, { ts, value });
        }
        table = restored;
      },
    };
  },
});
