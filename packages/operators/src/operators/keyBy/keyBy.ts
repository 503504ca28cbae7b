// keyBy: partitions a stream by the value of one field (Flink's DataStream#keyBy with a field
// KeySelector). Downstream keyed operators see only their key's state and timers. With `salt`,
// a hot key is spread over n sub-keys `<value>#<i>` for a two-stage (salt + combine) aggregation.
import { z } from "zod";
import type { JsonObject, Key } from "../../core/api";
import { canonicalKey, murmur3_32 } from "../../core/keys";
import { defineOperator } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { errorsPort } from "../side-outputs";

export const keyByParams = z.strictObject({
  field: fieldName().describe("Top-level field whose value is the key, e.g. `cardId`: a string, number or boolean. Records without it go to `errors`"),
  salt: z
    .number()
    .int({ error: "must be a whole number of sub-keys, e.g. 8" })
    .min(1, { error: "must be at least 1 (the number of sub-keys per key)" })
    .optional()
    .describe("Hot keys: split each key into this many sub-keys `<value>#0` … `<value>#<salt−1>` so one busy key spreads over several subtasks; results per sub-key must then be combined: a window with `partial: true`, then `keyBy { field: \"key\" }` and `window.combine`"),
  saltBy: fieldName()
    .optional()
    .describe("With salt: the field whose value picks the sub-key (e.g. `txId`), so the choice is stable per value; unset: a hash of the whole record"),
});
export type KeyByParams = z.infer<typeof keyByParams>;

/** The separator between a salted key and its sub-key index; see combine stages downstream. */
export const SALT_SEPARATOR = "#";

/**
 * The key of `value` under these params; throws a KeyError saying why there is none. Pure, so
 * the engine, the tests and the inspector's preview agree.
 */
export function selectKey(params: KeyByParams, value: JsonObject): Key {
  const base = canonicalKey(value[params.field], `field "${params.field}"`);
  if (params.salt === undefined) return base;
  // The sub-key must come from the record, never from arrival order or randomness, so a replay
  // puts every record in the same sub-key.
  const hashed = params.saltBy !== undefined ? canonicalKey(value[params.saltBy], `salt field "${params.saltBy}"`) : JSON.stringify(value);
  return `${base}${SALT_SEPARATOR}${murmur3_32(hashed) % params.salt}`;
}

export const keyBySpec = defineOperator({
  type: "keyBy",
  version: 1,
  category: "keying",
  title: "Key by",
  summary: "Partition the stream by a field (card, customer, merchant) for keyed state",
  docs: `Keys the stream by the value of \`field\`: every keyed operator downstream (windows, velocity, ...) then
keeps separate state and timers per key, and keys are spread over subtasks by key group
(murmur3 of the key modulo \`maxParallelism\`).

**Choose a bounded key.** State lives per key. Keying by an id that never repeats (\`txId\`, \`eventId\`) creates
a key per record and state that only grows; key by the entity you reason about (\`cardId\`, \`customerId\`)
and give stateful operators a TTL. The validator warns about this.

**Hot keys.** A key much busier than the rest (a marketplace merchant, \`country\`) lands on one subtask. With
\`salt: n\` each key becomes \`<value>#<i>\`, i in 0…n−1, chosen by a hash of \`saltBy\` (or of the whole record),
so its load spreads over up to n subtasks. Salting changes what "per key" means: aggregate per sub-key first
(e.g. a window count), then **combine**: a tumbling or hopping window with \`partial: true\` emits each sub-key's
mergeable partial under the original key; \`keyBy { field: "key" }\` and \`window.combine\` merge them into the
unsalted result (two-stage, local-global aggregation).

Records whose field is missing, null, an object or an array go to \`errors\` with the reason.`,
  params: keyByParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], required: true }],
  outputs: [{ id: "out", label: "keyed", kind: "keyed", description: "The same records, keyed by the field's value" }, errorsPort()],
  requiresKeyedInput: false,
  stateful: false,
  outputFields: (_params, inputFields) => inputFields,
  // The engine keys each record with this selector before processElement and routes a KeyError
  // (missing, null, object or array value) to `errors`; the operator itself only forwards.
  keySelector: (params) => (value) => selectKey(params, value),
  create() {
    return {
      processElement(record, ctx) {
        ctx.output(record.value);
      },
    };
  },
});
