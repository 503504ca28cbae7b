// Reading the fields that pattern operators name in their params (`amount`, `cardId`,
// `payment.amount`), and the canonical JSON that breaks timestamp ties deterministically.
import type { JsonObject, JsonValue } from "../../core/api";
import type { ParamCheckContext, ParamIssue } from "../../core/spec";
import { closestName } from "../../expr/cel";

/**
 * The value at a field path: a top-level name, or a dotted path into nested objects
 * (`payment.amount`). A top-level field whose name itself contains a dot wins over the path.
 */
export function readField(record: JsonObject, path: string): JsonValue | undefined {
  const direct = record[path];
  if (direct !== undefined || !path.includes(".")) return direct;
  let current: JsonValue | undefined = record;
  for (const part of path.split(".")) {
    if (current === null || typeof current !== "object" || Array.isArray(current)) return undefined;
    current = current[part];
  }
  return current;
}

/**
 * A finite number from a field, or undefined. Decimal strings (`"125.50"`) are accepted because
 * payment producers often quote amounts to keep their precision; anything else is not a number.
 */
export function readNumber(record: JsonObject, path: string): number | undefined {
  const v = readField(record, path);
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string" && /^\s*-?\d+(\.\d+)?([eE][+-]?\d+)?\s*$/.test(v)) return Number(v);
  return undefined;
}

/** Why readNumber gave nothing, phrased for the `errors` port. */
export function notANumberMessage(record: JsonObject, path: string): string {
  const v = readField(record, path);
  return v === undefined ? `field "${path}" is missing from the record` : `field "${path}" is ${JSON.stringify(v)}, not a number`;
}

/**
 * JSON with object keys sorted: equal records give equal strings whatever their field order.
 * Used to order records that share a timestamp, so that processing does not depend on arrival.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  const parts: string[] = [];
  for (const k of keys) {
    const v = value[k];
    if (v !== undefined) parts.push(`${JSON.stringify(k)}:${canonicalJson(v)}`);
  }
  return `{${parts.join(",")}}`;
}

/** A JSON object (not null, not an array). */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The validator's issues for field-name params, when the input's fields are known: an unknown
 * field is an error for fields the operator needs, a warning for optional ones (an evidence id,
 * a type to count by). Dotted paths are checked by their first segment.
 */
export function fieldParamIssues(
  ctx: ParamCheckContext,
  fields: ReadonlyArray<{ param: string; field: string | undefined; severity: "error" | "warning"; consequence?: string }>,
): ParamIssue[] {
  const known = ctx.inputFields;
  if (known === undefined) return [];
  const issues: ParamIssue[] = [];
  for (const { param, field, severity, consequence } of fields) {
    if (field === undefined) continue;
    const top = field.split(".")[0] ?? field;
    if (known.includes(field) || known.includes(top)) continue;
    const best = closestName(top, known);
    const hint = best === undefined ? "" : ` — did you mean "${best}"?`;
    issues.push({ severity, param, message: `unknown field "${field}"${hint}; the input records have ${known.map((f) => `"${f}"`).join(", ")}${consequence ? ` (${consequence})` : ""}` });
  }
  return issues;
}
