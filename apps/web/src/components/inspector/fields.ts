// The inspector's form, generated from an operator's params JSON Schema (`catalog.list` sends
// `z.toJSONSchema(spec.params, { io: "input" })`): one field descriptor per param, then text ⇄
// value conversion per kind. Framework-free, unit-tested beside it (fields.test.ts).
//
// Which editor a param gets: its FORMAT_META_KEY ("duration", "time-zone", "cel", "field") first,
// then its JSON type. Values are stored as the analyst wrote them (`"10m"`, not 600000), as the
// document format wants; text that does not parse is stored too, so the shared validator reports
// it in the problems panel and blocks saving, while the field shows the error at once.
import { FORMAT_META_KEY, formatDuration, parseDuration, type Issue } from "@keyflow/operators";

export type FieldKind =
  | "text"
  | "field"
  | "number"
  | "integer"
  | "enum"
  | "const"
  | "boolean"
  | "duration"
  | "time-zone"
  | "cel"
  | "code"
  | "string-list"
  | "object"
  | "map"
  | "json";

export interface FieldDescriptor {
  /** The param's own name (the last segment of its path). */
  name: string;
  path: readonly string[];
  /** Dotted path, as the validator names params (`aggregate.op`); test ids are `param-<key>`. */
  key: string;
  label: string;
  description?: string;
  required: boolean;
  /** The schema's default: shown as the placeholder and applied by the runner when unset. */
  default?: unknown;
  kind: FieldKind;
  /** enum: the allowed values. */
  options?: readonly string[];
  /** const: the only value. */
  constValue?: unknown;
  /** number / integer bounds, when meaningful. */
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  /** string-list: what each item is. */
  itemKind?: "text" | "field";
  /** object: its fields. */
  fields?: readonly FieldDescriptor[];
  /** map (a record of named values): what each value is, and the pattern of the names. */
  valueKind?: "cel" | "text" | "integer";
  keyPattern?: string;
}

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema => typeof value === "object" && value !== null && !Array.isArray(value);
const types = (schema: Schema): string[] => (Array.isArray(schema.type) ? schema.type.filter((t): t is string => typeof t === "string") : typeof schema.type === "string" ? [schema.type] : []);

/** The distinct types of an `anyOf`'s alternatives, sorted and joined ("integer,string"). */
const alternativeTypes = (schema: Schema): string => (Array.isArray(schema.anyOf) ? [...new Set(schema.anyOf.filter(isSchema).flatMap(types))].sort().join() : "");

const ACRONYMS: Record<string, string> = { id: "ID", ttl: "TTL", cel: "CEL", k: "K", iana: "IANA", url: "URL" };

/** `maxOutOfOrdernessMs` → "Max out of orderness" (durations drop their `Ms`), `ttlMs` → "TTL". */
export function humanize(name: string, kind?: FieldKind): string {
  const stem = kind === "duration" && /.Ms$/.test(name) ? name.slice(0, -2) : name;
  const words = stem
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .trim()
    .split(/\s+/)
    .map((w) => ACRONYMS[w.toLowerCase()] ?? w.toLowerCase());
  const text = words.join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Bounds beyond ±2^53 are zod's "safe integer" defaults: not worth showing. */
const meaningful = (n: unknown): number | undefined => (typeof n === "number" && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined);

function kindOf(name: string, schema: Schema): Pick<FieldDescriptor, "kind" | "options" | "constValue" | "itemKind" | "valueKind" | "keyPattern"> {
  const format = schema[FORMAT_META_KEY];
  const t = types(schema);
  if (format === "duration") return { kind: "duration" };
  if (format === "time-zone") return { kind: "time-zone" };
  if (format === "cel") return { kind: "cel" };
  if ("const" in schema) return { kind: "const", constValue: schema.const };
  if (Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string")) return { kind: "enum", options: schema.enum as string[] };
  if (t.length === 1) {
    switch (t[0]) {
      case "boolean":
        return { kind: "boolean" };
      case "integer":
        return { kind: "integer" };
      case "number":
        return { kind: "number" };
      case "string": {
        if (format === "field") return { kind: "field" };
        const multiline = (typeof schema.default === "string" && schema.default.includes("\n")) || name === "code";
        return { kind: multiline ? "code" : "text" };
      }
      case "array": {
        const items = isSchema(schema.items) ? schema.items : {};
        if (types(items).length === 1 && types(items)[0] === "string") return { kind: "string-list", itemKind: items[FORMAT_META_KEY] === "field" ? "field" : "text" };
        return { kind: "json" };
      }
      case "object": {
        if (isSchema(schema.properties) && Object.keys(schema.properties).length > 0) return { kind: "object" };
        const values = isSchema(schema.additionalProperties) ? schema.additionalProperties : undefined;
        const pattern = isSchema(schema.propertyNames) && typeof schema.propertyNames.pattern === "string" ? schema.propertyNames.pattern : undefined;
        const keyPattern = pattern ? { keyPattern: pattern } : {};
        if (values && types(values).length === 1 && types(values)[0] === "string") {
          return { kind: "map", valueKind: values[FORMAT_META_KEY] === "cel" ? "cel" : "text", ...keyPattern };
        }
        // An integer written as a number or as digits (source.kafka's offsets per partition): the map's
        // text inputs hold digits, which the params schema turns into numbers.
        if (values && alternativeTypes(values) === "integer,string") return { kind: "map", valueKind: "integer", ...keyPattern };
        return { kind: "json" };
      }
    }
  }
  // A value written as a number or as text (an instant: epoch ms or ISO-8601): one text input, which
  // the params schema parses either way.
  if (alternativeTypes(schema) === "integer,string") return { kind: "text" };
  return { kind: "json" };
}

function describeField(name: string, parent: readonly string[], schema: Schema, required: boolean): FieldDescriptor {
  const path = [...parent, name];
  const kind = kindOf(name, schema);
  const field: FieldDescriptor = {
    name,
    path,
    key: path.join("."),
    label: humanize(name, kind.kind),
    required,
    ...kind,
  };
  if (typeof schema.description === "string") field.description = schema.description;
  if ("default" in schema) field.default = schema.default;
  if (kind.kind === "number" || kind.kind === "integer") {
    const min = meaningful(schema.minimum);
    const max = meaningful(schema.maximum);
    const exMin = meaningful(schema.exclusiveMinimum);
    if (min !== undefined) field.minimum = min;
    if (max !== undefined) field.maximum = max;
    if (exMin !== undefined) field.exclusiveMinimum = exMin;
  }
  if (kind.kind === "object") field.fields = describeObject(schema, path);
  return field;
}

function describeObject(schema: Schema, path: readonly string[]): FieldDescriptor[] {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []);
  return Object.entries(properties).map(([name, sub]) => describeField(name, path, isSchema(sub) ? sub : {}, required.has(name)));
}

/** One descriptor per param of an operator, in the schema's (the spec's) order. */
export function describeParams(paramsSchema: Record<string, unknown>): FieldDescriptor[] {
  return describeObject(paramsSchema, []);
}

// ---- Text ⇄ value -----------------------------------------------------------------------------

export interface ParsedInput {
  /** What to store; undefined removes the param (its default applies). */
  value: unknown;
  /** Shown under the field at once, before the validator runs. */
  error?: string;
}

const DURATION_EXAMPLES = "250ms, 10s, 10m, 24h or 7d";

/** A duration as typed: `10m` and `1h30m` stay text, a bare `5000` is a number of ms. */
export function parseDurationInput(text: string): ParsedInput {
  const s = text.trim();
  if (s === "") return { value: undefined };
  const ms = parseDuration(s);
  if (ms === undefined) return { value: text, error: `"${s}" is not a duration — write it like ${DURATION_EXAMPLES}` };
  return { value: /^\d+$/.test(s) ? ms : s };
}

/** "10m = 600,000 ms" for the hint under a duration field; undefined when it is not one. */
export function describeDuration(value: unknown): string | undefined {
  const ms = typeof value === "number" ? value : typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  return `${formatDuration(ms)} = ${ms.toLocaleString("en-US")} ms`;
}

function parseNumberInput(field: FieldDescriptor, text: string): ParsedInput {
  const s = text.trim();
  if (s === "") return { value: undefined };
  const n = Number(s);
  if (!Number.isFinite(n) || !/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(s)) return { value: text, error: `"${s}" is not a number` };
  if (field.kind === "integer" && !Number.isInteger(n)) return { value: n, error: "must be a whole number" };
  if (field.minimum !== undefined && n < field.minimum) return { value: n, error: `must be at least ${field.minimum}` };
  if (field.exclusiveMinimum !== undefined && n <= field.exclusiveMinimum) return { value: n, error: `must be greater than ${field.exclusiveMinimum}` };
  if (field.maximum !== undefined && n > field.maximum) return { value: n, error: `must be at most ${field.maximum}` };
  return { value: n };
}

/** The value a field's text stands for (text inputs, textareas, the string list, raw JSON). */
export function parseFieldInput(field: FieldDescriptor, text: string): ParsedInput {
  switch (field.kind) {
    case "duration":
      return parseDurationInput(text);
    case "number":
    case "integer":
      return parseNumberInput(field, text);
    case "string-list": {
      const items = text
        .split(/[\n,]/)
        .map((s) => s.trim())
        .filter(Boolean);
      return { value: items.length ? items : undefined };
    }
    case "json":
      if (text.trim() === "") return { value: undefined };
      try {
        return { value: JSON.parse(text) };
      } catch (error) {
        return { value: undefined, error: `not valid JSON: ${error instanceof Error ? error.message : String(error)}` };
      }
    case "boolean":
      return { value: text === "" ? undefined : text === "true" };
    default:
      return { value: text === "" ? undefined : text };
  }
}

/** The text a field shows for a stored value (the inverse of parseFieldInput). */
export function formatFieldValue(field: FieldDescriptor, value: unknown): string {
  if (value === undefined || value === null) return "";
  switch (field.kind) {
    case "duration":
      return typeof value === "number" ? formatDuration(value) : String(value);
    case "string-list":
      return Array.isArray(value) ? value.map(String).join("\n") : String(value);
    case "json":
    case "object":
    case "map":
      return JSON.stringify(value, null, 2);
    default:
      return typeof value === "object" ? JSON.stringify(value) : String(value);
  }
}

/** The placeholder of an unset field: its default, as the analyst would write it. */
export function placeholderOf(field: FieldDescriptor): string {
  if (field.default === undefined) {
    if (field.kind === "duration") return "e.g. 10m";
    if (field.kind === "string-list") return "one per line";
    return field.required ? "" : "optional";
  }
  return `default: ${formatFieldValue(field, field.default).split("\n")[0] ?? ""}`;
}

// ---- Issues per field -------------------------------------------------------------------------

/** The validator's issues about this field or anything inside it (`aggregate` takes `aggregate.op`). */
export function issuesForField(field: Pick<FieldDescriptor, "key">, issues: readonly Issue[]): Issue[] {
  return issues.filter((i) => i.param !== undefined && (i.param === field.key || i.param.startsWith(`${field.key}.`)));
}

/**
 * The part of a validator message that follows its subject: `node "vel": param "windowMs" must
 * be …` → `must be …`. Messages about something else are kept whole.
 */
export function issueText(issue: Issue): string {
  const m = /^node "[^"]*": param "[^"]*":? (.*)$/s.exec(issue.message);
  if (m?.[1]) return m[1];
  const n = /^node "[^"]*": (.*)$/s.exec(issue.message);
  return n?.[1] ?? issue.message;
}

/** IANA time zones this browser knows, UTC first. */
export function timeZoneOptions(): string[] {
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...zones.filter((z) => z !== "UTC")];
}
