"use client";
// A CEL expression param in Monaco: syntax colours, completion of the record's fields, and inline
// errors from the same parser the runner uses. Monaco needs `window`, so the editor itself loads
// only in the browser (ssr: false); until then a plain preview of the text shows.
//
// The inspector renders it for params whose JSON Schema says `x-keyflow-format: "cel"`; `fields`
// is `validatePipeline(doc).inputFields[nodeId]` (the source's declared fields, or the demo's).
import dynamic from "next/dynamic";
import type { CelMarker } from "./cel-language";

export interface CelEditorProps {
  value: string;
  onChange: (value: string) => void;
  nodeId: string;
  /** The param's dotted path (`expression`, `assignments.risk`): names the model and the markers. */
  param: string;
  /** The fields of the node's input records; undefined when unknown (no completion of fields, no unknown-field markers). */
  fields?: readonly string[] | undefined;
  /** Height grows with the text up to this many lines (default 6). */
  maxLines?: number;
  readOnly?: boolean;
  ariaLabel?: string;
  /** Told of the markers after each check (e.g. to show a count beside the field). */
  onValidate?: (markers: CelMarker[]) => void;
  /** Told why an input over the expression length limit was refused (undefined once a change fits). */
  onTooLong?: (message: string | undefined) => void;
  /** Default `cel-<param>`. */
  testId?: string;
  /** Put on Monaco's own text area once it exists (the inspector's `param-<key>`). */
  inputTestId?: string;
}

const CelEditorImpl = dynamic(() => import("./CelEditorImpl").then((m) => m.CelEditorImpl), {
  ssr: false,
  loading: () => <div className="kf-cel__loading">Loading editor…</div>,
});

export function CelEditor(props: CelEditorProps) {
  return (
    <div className="kf-cel nokey nodrag nowheel" data-testid={props.testId ?? `cel-${props.param}`} data-node={props.nodeId}>
      <CelEditorImpl {...props} />
    </div>
  );
}
