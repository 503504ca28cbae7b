// CEL expressions over records: compile once per node, evaluate per record.
export {
  compileExpression,
  checkExpression,
  closestName,
  editDistance,
  positionAt,
  ExpressionError,
  ExpressionSyntaxError,
  ExpressionEvaluationError,
  type CompiledExpression,
  type ExpressionDiagnostic,
  type ExpressionSite,
  type SourcePosition,
  type SourceSpan,
} from "./cel";
export { celExpression, fieldName } from "./params";
