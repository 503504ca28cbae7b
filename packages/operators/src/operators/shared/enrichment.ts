// What the two enrichment operators share: their join-key and miss-handling params, the key of a
// record on either side, and the shape of an enriched record (the reference record and its
// version, so an auditor can tell which version scored a transaction).
import { z } from "zod";
import type { JsonObject, JsonValue, Key } from "../../core/api";
import { canonicalKey, KeyError } from "../../core/keys";
import type { OutputPortSpec } from "../../core/spec";
import { fieldName } from "../../expr/params";
import { readField } from "./fields";

export const joinParams = {
  keyField: fieldName().describe("Field of the main records to look up, e.g. \"merchantId\""),
  referenceKeyField: fieldName().describe("Field of the reference records that holds the same key, e.g. \"id\""),
  onMiss: z
    .enum(["miss-port", "pass-with-nulls"])
    .default("miss-port")
    .describe("A main record without reference data: `miss-port` (default) sends it unchanged to `miss`; `pass-with-nulls` emits it with null enrichment"),
  targetField: fieldName()
    .default("reference")
    .describe("Field added to main records for the reference record; `<targetField>Version` gets the reference version's timestamp. Default \"reference\""),
};

export function missPort(): OutputPortSpec {
  return {
    id: "miss",
    label: "misses",
    kind: "same",
    side: true,
    description: "Main records with no reference data for their key, unchanged (with onMiss = miss-port)",
  };
}

/** The canonical join key of a record's field, or an Error whose message says why there is none. */
export function joinKeyOf(value: JsonObject, field: string, side: string): Key | Error {
  try {
    return canonicalKey(readField(value, field), `${side} field "${field}"`);
  } catch (e) {
    if (e instanceof KeyError) return e;
    throw e;
  }
}

/** The main record with the reference record (or null) and its version's timestamp (or null). */
export function enriched(main: JsonObject, targetField: string, reference: JsonObject | null, version: number | null): JsonObject {
  return { ...main, [targetField]: reference, [`${targetField}Version`]: version };
}

/** Output fields of an enrichment: the main record's plus the two added. */
export function enrichedFields(inputFields: readonly string[] | undefined, targetField: string): readonly string[] | undefined {
  return inputFields === undefined ? undefined : [...inputFields.filter((f) => f !== targetField && f !== `${targetField}Version`), targetField, `${targetField}Version`];
}

/** Event time from a field: epoch ms, or an ISO-8601 string. */
export function readTimestamp(value: JsonObject, field: string): number | undefined {
  const v: JsonValue | undefined = readField(value, field);
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string") {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}
