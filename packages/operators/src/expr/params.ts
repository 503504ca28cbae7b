// zod helpers for params that refer to records: a CEL expression, a field name. They carry the
// editor hint (x-keyflow-format) so the inspector opens Monaco or a field picker.
import { z } from "zod";
import { MAX_EXPRESSION_LENGTH } from "../limits";
import { FORMAT_META_KEY } from "../pipeline/durations";

/** A CEL expression param; its syntax is checked by the spec's check() (which knows the node). */
export function celExpression() {
  return z
    .string({ error: "must be a CEL expression (text), e.g. `amount > 50000 && country != \"SA\"`" })
    .min(1, { error: "must be a non-empty CEL expression, e.g. `amount > 50000`" })
    .max(MAX_EXPRESSION_LENGTH, { error: (issue) => `is ${String((issue.input as string).length)} characters long, over the limit of ${MAX_EXPRESSION_LENGTH} for an expression` })
    .meta({ [FORMAT_META_KEY]: "cel" });
}

/** A top-level record field name, e.g. `cardId`. */
export function fieldName() {
  return z
    .string({ error: "must be a field name (text), e.g. \"cardId\"" })
    .min(1, { error: "must be a non-empty field name, e.g. \"cardId\"" })
    .meta({ [FORMAT_META_KEY]: "field" });
}
