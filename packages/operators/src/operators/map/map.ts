// map: computes new fields with CEL (`assignments`), or replaces the record with the object a CEL
// expression builds (`expression`). Stateless; a keyed input stays keyed. A record on which an
// expression fails goes to `errors` with the reason, never half-transformed downstream.
import { z } from "zod";
import type { JsonObject } from "../../core/api";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { ExpressionEvaluationError, checkExpression, compileExpression, type CompiledExpression } from "../../expr/cel";
import { celExpression } from "../../expr/params";
import { errorRecord, errorsPort } from "../side-outputs";

const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const mapParams = z
  .strictObject({
    assignments: z
      .record(
        z.string().regex(FIELD_NAME, { error: "a new field name has letters, digits and _ and starts with a letter or _" }),
        celExpression(),
      )
      .optional()
      .describe("New or replaced fields, each computed by a CEL expression over the input record, e.g. { \"amountEur\": \"amount * 0.25\", \"abroad\": \"country != cardCountry\" }. All read the input record, so their order does not matter"),
    expression: celExpression()
      .optional()
      .describe("Instead of assignments: a CEL expression building the whole output record, e.g. `{\"cardId\": cardId, \"risk\": amount > 1000 ? \"high\" : \"low\"}`"),
  })
  .refine((p) => (p.assignments === undefined) !== (p.expression === undefined), {
    error: "set either `assignments` (add fields) or `expression` (build the whole record), not both and not neither",
  });
export type MapParams = z.infer<typeof mapParams>;

interface Assignment {
  field: string;
  expr: CompiledExpression;
}

export const mapSpec = defineOperator({
  type: "map",
  version: 1,
  category: "transform",
  title: "Map",
  summary: "Compute fields with CEL expressions",
  docs: `Transforms each record with [CEL](https://cel.dev) expressions over its fields.

- \`assignments\`: \`{ "amountEur": "amount * 0.25", "abroad": "country != cardCountry" }\` adds (or replaces)
  those fields and keeps the others. Every expression reads the **input** record, so one assignment cannot
  see another's result.
- \`expression\`: builds the whole output record, which must be an object:
  \`{"cardId": cardId, "risk": amount > 1000 ? "high" : "low"}\`.

Integer results are written as JSON numbers, timestamps as ISO-8601 strings. A keyed input stays keyed, but
changing the key field does not re-key the stream: add a keyBy after the map for that.

**Errors.** A record on which any expression fails (a missing field, a division by zero) goes to the
\`errors\` port with the reason, unchanged.`,
  params: mapParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], required: true }],
  outputs: [{ id: "out", label: "mapped", kind: "same" }, errorsPort()],
  requiresKeyedInput: false,
  stateful: false,
  check(params, ctx): ParamIssue[] {
    const sources: [string, string][] = params.expression !== undefined
      ? [["expression", params.expression]]
      : Object.entries(params.assignments ?? {}).map(([field, source]) => [`assignments.${field}`, source]);
    return sources.flatMap(([param, source]) =>
      checkExpression(source, { nodeId: ctx.nodeId, param }, ctx.inputFields).map((d) => ({ severity: d.severity, code: d.code, param, message: d.message })),
    );
  },
  outputFields(params, inputFields) {
    if (params.assignments === undefined || inputFields === undefined) return undefined;
    return [...new Set([...inputFields, ...Object.keys(params.assignments)])];
  },
  create(params, init) {
    const assignments: Assignment[] = Object.entries(params.assignments ?? {}).map(([field, source]) => ({
      field,
      expr: compileExpression(source, { nodeId: init.nodeId, param: `assignments.${field}` }),
    }));
    const whole = params.expression !== undefined ? compileExpression(params.expression, { nodeId: init.nodeId, param: "expression" }) : undefined;

    const transform = (input: JsonObject): JsonObject => {
      if (whole) {
        const result = whole.evaluate(input);
        if (result === null || typeof result !== "object" || Array.isArray(result)) {
          throw new ExpressionEvaluationError(whole.site, `the expression must build an object such as {"field": value}, but gave ${JSON.stringify(result)}`);
        }
        return result;
      }
      const out: JsonObject = { ...input };
      for (const a of assignments) out[a.field] = a.expr.evaluate(input);
      return out;
    };

    return {
      processElement(record, ctx) {
        let out: JsonObject;
        try {
          out = transform(record.value);
        } catch (e) {
          if (!(e instanceof ExpressionEvaluationError)) throw e;
          ctx.sideOutput("errors", errorRecord(init.nodeId, e.message, record.value));
          return;
        }
        ctx.output(out);
      },
    };
  },
});
