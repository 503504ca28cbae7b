// filter: keeps the records for which a CEL predicate holds (`amount > 50000 && country != "SA"`).
// Stateless; a keyed input stays keyed. A record on which the predicate fails to evaluate (a
// missing field, a string compared with a number) goes to `errors` with the reason.
import { z } from "zod";
import { defineOperator, type ParamIssue } from "../../core/spec";
import { ExpressionEvaluationError, checkExpression, compileExpression } from "../../expr/cel";
import { celExpression } from "../../expr/params";
import { errorRecord, errorsPort } from "../side-outputs";

export const filterParams = z.strictObject({
  expression: celExpression().describe(
    "CEL predicate over the record's fields by name, e.g. `amount > 50000 && country != \"SA\"`; records for which it is true pass. Numbers compare across integer and decimal",
  ),
});
export type FilterParams = z.infer<typeof filterParams>;

export const filterSpec = defineOperator({
  type: "filter",
  version: 1,
  category: "transform",
  title: "Filter",
  summary: "Keep the records matching a CEL condition",
  docs: `Keeps the records for which \`expression\` is true. The expression is
[CEL](https://cel.dev): the record's top-level fields are variables (\`amount\`, \`country\`), nested ones are
reached with dots (\`device.os == "android"\`), and \`has(device.os)\` tests for a nested field.

- \`record\` is the whole record: a field named like a CEL type (\`type\`, \`int\`, \`string\`, ...) reads as \`record.type == "login"\`.
- Numbers compare across integer and decimal: \`amount > 50000\` holds for \`50000.5\` and for \`60000\`.
- Strings: \`country in ["NG", "RU"]\`, \`merchantId.startsWith("m-5411")\`, \`email.matches("@example\\\\.com$")\`.
- Stateless: a keyed input stays keyed, so a filter may sit between keyBy and a keyed operator.

**Errors.** If the expression cannot be evaluated on a record (a missing field, a null compared with a
number, a non-bool result) the record goes to the \`errors\` port with the reason; unconnected, it becomes a dead
letter. It is never silently dropped.`,
  params: filterParams,
  inputs: [{ id: "in", label: "records", accepts: ["stream", "keyed"], required: true }],
  outputs: [{ id: "out", label: "matching", kind: "same", description: "Records for which the expression is true" }, errorsPort()],
  requiresKeyedInput: false,
  stateful: false,
  check(params, ctx): ParamIssue[] {
    return checkExpression(params.expression, { nodeId: ctx.nodeId, param: "expression" }, ctx.inputFields).map((d) => ({
      severity: d.severity,
      code: d.code,
      param: "expression",
      message: d.message,
    }));
  },
  outputFields: (_params, inputFields) => inputFields,
  create(params, init) {
    const predicate = compileExpression(params.expression, { nodeId: init.nodeId, param: "expression" });
    return {
      processElement(record, ctx) {
        let keep: boolean;
        try {
          keep = predicate.test(record.value);
        } catch (e) {
          if (!(e instanceof ExpressionEvaluationError)) throw e;
          ctx.sideOutput("errors", errorRecord(init.nodeId, e.message, record.value));
          return;
        }
        if (keep) ctx.output(record.value);
      },
    };
  },
});
