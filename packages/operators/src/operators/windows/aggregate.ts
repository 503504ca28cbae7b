// The windows' incremental aggregate functions (Flink's AggregateFunction: create, add, merge,
// getResult). Accumulators are small JSON values, so a pane or slice costs a few bytes and no
// raw record is ever buffered; only distinctCount keeps a set, which its result requires.
import { z } from "zod";
import type { Collector, JsonObject, JsonValue } from "../../core/api";
import { errorRecord } from "../side-outputs";
import { fieldName } from "../../expr/params";
import { notANumberMessage, readField, readNumber } from "../shared/fields";

export const AGGREGATE_OPS = ["count", "sum", "min", "max", "avg", "distinctCount"] as const;
export type AggregateOp = (typeof AGGREGATE_OPS)[number];

export const aggregateParams = z
  .strictObject({
    op: z
      .enum(AGGREGATE_OPS)
      .describe(
        "What each window computes: `count` records (with `field`: records where it is present and not null), `sum`/`min`/`max`/`avg` of a numeric field, `distinctCount` of a field's distinct values",
      ),
    field: fieldName()
      .optional()
      .describe("The field aggregated, e.g. `amount` (a dotted path reaches nested fields). Required except for `count`; numeric for sum/min/max/avg (decimal strings accepted)"),
  })
  .superRefine((a, ctx) => {
    if (a.op !== "count" && a.field === undefined) {
      ctx.addIssue({ code: "custom", path: ["field"], message: `"${a.op}" needs a field to aggregate, e.g. { "op": "${a.op}", "field": "amount" }` });
    }
  })
  .describe("The incremental aggregate computed per key and window");
export type AggregateParams = z.infer<typeof aggregateParams>;

/** A distinctCount accumulator: the distinct values seen (type-prefixed, see distinctKey) as object keys. */
export type DistinctSet = { [tagged: string]: 1 };

/** One slot of window state: numbers for every op, one object for distinctCount. */
export type Slot = number | DistinctSet;

/**
 * Flink's AggregateFunction, laid out flat: an accumulator is `width` consecutive slots of the
 * key's state array (count: [n]; sum/min/max: [x]; avg: [sum, n]; distinctCount: [set]). Flat
 * numbers keep a key's whole window state in one double array: two heap objects per key, which
 * is what makes random access over 100 k keys cheap (every extra object is a cache miss).
 */
export interface AggregateFunction {
  readonly op: AggregateOp;
  readonly width: number;
  /** Whether every accumulator slot is a plain sum of numbers (count, sum, avg): totals less parts are then results. */
  readonly additive: boolean;
  /**
   * The record's input, or why it has none (the record then goes to `errors`). Tell an Invalid by
   * `typeof x === "object"`: `instanceof` of a class imported from another module was a generic call
   * per record under Node's own module loader, as the runner runs (tsx bench, 1-hour hop: 4.5 -> 5.5 M/s).
   */
  input(record: JsonObject): number | string | Invalid;
  /** Writes an accumulator holding one input at arr[off, off + width). */
  init(arr: Slot[], off: number, input: number | string): void;
  add(arr: Slot[], off: number, input: number | string): void;
  /** Starts `scratch` (width slots) as a copy of the accumulator at arr[off]. */
  copyTo(scratch: Slot[], arr: readonly Slot[], off: number): void;
  /** Merges the accumulator at arr[off] into `scratch`, leaving arr unchanged. */
  mergeInto(scratch: Slot[], arr: readonly Slot[], off: number): void;
  result(scratch: readonly Slot[]): JsonValue;
}

/** Why a record has no input for the aggregate. */
export class Invalid {
  constructor(readonly message: string) {}
}

/**
 * Where a window operator sends a record it does not aggregate: `late` (undefined: the last window
 * it could join is purged, its cleanup time <= the watermark) or `errors` (it has no input for the
 * aggregate). Only on that path: the check itself stays inline in each operator's per-record code,
 * where a call to another module's function was not inlined under Node's own module loader.
 */
export function divertFromWindow(record: JsonObject, ctx: Collector, nodeId: string, why: Invalid | undefined): void {
  if (why === undefined) ctx.sideOutput("late", record);
  else ctx.sideOutput("errors", errorRecord(nodeId, why.message, record));
}

/** The distinct-value key: JSON types stay apart ("1" and 1 are two values), prefixes keep `__proto__` harmless. */
function distinctKey(v: JsonValue): string {
  return typeof v === "string" ? `s${v}` : `j${JSON.stringify(v)}`;
}

const NO_DISTINCT = "";
const num = (x: Slot | undefined): number => x as number;

function numeric(op: "count" | "sum" | "min" | "max", input: AggregateFunction["input"]): AggregateFunction {
  const combine = op === "count" || op === "sum" ? (a: number, b: number) => a + b : op === "min" ? Math.min : Math.max;
  return {
    op,
    width: 1,
    additive: op === "count" || op === "sum",
    input,
    init: (arr, off, i) => {
      arr[off] = i as number;
    },
    add: (arr, off, i) => {
      arr[off] = combine(num(arr[off]), i as number);
    },
    copyTo: (scratch, arr, off) => {
      scratch[0] = num(arr[off]);
    },
    mergeInto: (scratch, arr, off) => {
      scratch[0] = combine(num(scratch[0]), num(arr[off]));
    },
    result: (scratch) => num(scratch[0]),
  };
}

export function aggregateFunction(params: AggregateParams): AggregateFunction {
  const field = params.field;
  switch (params.op) {
    case "count":
      return numeric(
        "count",
        field === undefined
          ? () => 1
          : (r) => {
              const v = readField(r, field);
              return v === undefined || v === null ? 0 : 1;
            },
      );
    case "sum":
    case "min":
    case "max": {
      const f = field as string;
      return numeric(params.op, (r) => readNumber(r, f) ?? new Invalid(notANumberMessage(r, f)));
    }
    case "avg": {
      const f = field as string;
      return {
        op: "avg",
        width: 2,
        additive: true,
        input: (r) => readNumber(r, f) ?? new Invalid(notANumberMessage(r, f)),
        init: (arr, off, i) => {
          arr[off] = i as number;
          arr[off + 1] = 1;
        },
        add: (arr, off, i) => {
          arr[off] = num(arr[off]) + (i as number);
          arr[off + 1] = num(arr[off + 1]) + 1;
        },
        copyTo: (scratch, arr, off) => {
          scratch[0] = num(arr[off]);
          scratch[1] = num(arr[off + 1]);
        },
        mergeInto: (scratch, arr, off) => {
          scratch[0] = num(scratch[0]) + num(arr[off]);
          scratch[1] = num(scratch[1]) + num(arr[off + 1]);
        },
        result: (scratch) => (num(scratch[1]) === 0 ? null : num(scratch[0]) / num(scratch[1])),
      };
    }
    case "distinctCount": {
      const f = field as string;
      const set = (x: Slot | undefined): DistinctSet => x as DistinctSet;
      return {
        op: "distinctCount",
        width: 1,
        additive: false,
        input: (r) => {
          const v = readField(r, f);
          // As SQL's COUNT(DISTINCT x): a missing or null value is not a value.
          return v === undefined || v === null ? NO_DISTINCT : distinctKey(v);
        },
        init: (arr, off, i) => {
          const s: DistinctSet = {};
          if (i !== NO_DISTINCT) s[i as string] = 1;
          arr[off] = s;
        },
        add: (arr, off, i) => {
          if (i !== NO_DISTINCT) set(arr[off])[i as string] = 1;
        },
        copyTo: (scratch, arr, off) => {
          scratch[0] = { ...set(arr[off]) };
        },
        mergeInto: (scratch, arr, off) => {
          Object.assign(set(scratch[0]), set(arr[off]));
        },
        result: (scratch) => Object.keys(set(scratch[0])).length,
      };
    }
  }
}
