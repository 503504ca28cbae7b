// The serializable view of an operator spec that the browser receives (`catalog.list`): what the
// canvas needs to draw a node (title, category, typed ports) and what the palette and inspector
// (issue 5) need to describe it (summary, docs, the params' JSON Schema). The spec itself holds
// zod schemas and functions, which do not cross the wire; this view is derived from it, never
// written by hand, so there is still one description per operator.
import type { OperatorCategory, OperatorSpec, StreamKind } from "@keyflow/operators";
import { z } from "zod";

export interface InputPortView {
  id: string;
  label: string;
  accepts: readonly StreamKind[];
  multiple: boolean;
  required: boolean;
  description?: string;
}

export interface OutputPortView {
  id: string;
  label: string;
  kind: StreamKind | "same";
  side: boolean;
  description?: string;
}

export interface OperatorView {
  type: string;
  version: number;
  category: OperatorCategory;
  title: string;
  summary: string;
  docs: string;
  requiresKeyedInput: boolean;
  stateful: boolean;
  inputs: InputPortView[];
  outputs: OutputPortView[];
  /** JSON Schema (draft 2020-12) of the params as written in a document (zod input side). */
  paramsSchema: Record<string, unknown>;
}

/**
 * JSON Schema of an operator's params. `io: "input"` describes what an analyst writes (defaults
 * make fields optional); types JSON Schema cannot express (transforms, refinements' logic) become
 * `{}` instead of failing the whole catalog.
 */
export function paramsJsonSchema(params: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(params, { io: "input", unrepresentable: "any" });
}

export function toOperatorView(spec: OperatorSpec): OperatorView {
  return {
    type: spec.type,
    version: spec.version,
    category: spec.category,
    title: spec.title,
    summary: spec.summary,
    docs: spec.docs,
    requiresKeyedInput: spec.requiresKeyedInput,
    stateful: spec.stateful,
    inputs: spec.inputs.map((port) => ({
      id: port.id,
      label: port.label,
      accepts: [...port.accepts],
      multiple: port.multiple ?? false,
      required: port.required ?? false,
      ...(port.description === undefined ? {} : { description: port.description }),
    })),
    outputs: spec.outputs.map((port) => ({
      id: port.id,
      label: port.label,
      kind: port.kind,
      side: port.side ?? false,
      ...(port.description === undefined ? {} : { description: port.description }),
    })),
    paramsSchema: paramsJsonSchema(spec.params),
  };
}
