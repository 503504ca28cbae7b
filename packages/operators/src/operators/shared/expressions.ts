// CEL params of pattern operators: checked by the spec's check() with the node's input fields,
// compiled once per instance, evaluated per record with failures routed to `errors`.
import type { JsonObject, JsonValue, ProcessContext } from "../../core/api";
import type { ParamCheckContext, ParamIssue } from "../../core/spec";
import { ExpressionEvaluationError, checkExpression, compileExpression, type CompiledExpression } from "../../expr/cel";
import { errorRecord } from "../side-outputs";

/** The validator's issues for one expression param (syntax, unknown fields). */
export function expressionIssues(source: string, param: string, ctx: ParamCheckContext): ParamIssue[] {
  return checkExpression(source, { nodeId: ctx.nodeId, param }, ctx.inputFields).map((d) => ({ severity: d.severity, param, message: d.message }));
}

/** A compiled expression whose evaluation failures become `errors` records instead of exceptions. */
export class RecordExpression {
  private readonly compiled: CompiledExpression;

  constructor(
    source: string,
    private readonly nodeId: string,
    private readonly param: string,
  ) {
    this.compiled = compileExpression(source, { nodeId, param });
  }

  /** The predicate's result, or undefined after sending the record to `errors`. */
  test(record: JsonObject, ts: number, ctx: ProcessContext): boolean | undefined {
    try {
      return this.compiled.test(record);
    } catch (e) {
      if (!(e instanceof ExpressionEvaluationError)) throw e;
      ctx.sideOutput("errors", errorRecord(this.nodeId, e.message, record), ts);
      return undefined;
    }
  }

  /** The expression's numeric value, or undefined after sending the record to `errors`. */
  number(record: JsonObject, ts: number, ctx: ProcessContext): number | undefined {
    let v: JsonValue;
    try {
      v = this.compiled.evaluate(record);
    } catch (e) {
      if (!(e instanceof ExpressionEvaluationError)) throw e;
      ctx.sideOutput("errors", errorRecord(this.nodeId, e.message, record), ts);
      return undefined;
    }
    if (typeof v === "number" && Number.isFinite(v)) return v;
    const message = `node "${this.nodeId}": param "${this.param}": the expression gave ${JSON.stringify(v)}, not a number`;
    ctx.sideOutput("errors", errorRecord(this.nodeId, message, record), ts);
    return undefined;
  }
}
