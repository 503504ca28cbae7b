"use client";
// The code of a process.custom node, in Monaco's TypeScript with the context API's types: the
// inspector renders it for the `code` param of `process.custom`. Browser only (ssr: false).
import dynamic from "next/dynamic";

export interface CustomCodeEditorProps {
  value: string;
  onChange: (value: string) => void;
  nodeId: string;
  /** Pixels; default 360. */
  height?: number;
  readOnly?: boolean;
  /** Told why an input over the code length limit was refused (undefined once a change fits). */
  onTooLong?: (message: string | undefined) => void;
  /** Default `code-<nodeId>`. */
  testId?: string;
  /** Put on Monaco's own text area once it exists (the inspector's `param-<key>`). */
  inputTestId?: string;
}

const CustomCodeEditorImpl = dynamic(() => import("./CustomCodeEditorImpl").then((m) => m.CustomCodeEditorImpl), {
  ssr: false,
  loading: () => <div className="kf-panel__loading">Loading editor…</div>,
});

export function CustomCodeEditor(props: CustomCodeEditorProps) {
  return (
    <div className="kf-code nokey nodrag nowheel" data-testid={props.testId ?? `code-${props.nodeId}`}>
      <CustomCodeEditorImpl {...props} />
    </div>
  );
}
