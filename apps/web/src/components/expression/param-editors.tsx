"use client";
// The inspector's controls for expressions and code, plugged in through its ParamEditorsContext:
//   <ParamEditorsContext.Provider value={expressionParamEditors}>…<Inspector />…</ParamEditorsContext.Provider>
// - kind "cel": CelEditor (Monaco, CEL tokens, completion of the node's input fields, the engine's markers);
// - kind "code": CustomCodeEditor (Monaco TypeScript with the process.custom context types), for process.custom.
// Monaco's own text area gets the inspector's `param-<key>` test id once it exists (keyboard input goes there).
import type { ParamControlProps, ParamEditors } from "../inspector/ParamField";
import { CelEditor } from "./CelEditor";
import { CustomCodeEditor } from "./CustomCodeEditor";
import { fits } from "./length-guard";

const asText = (value: unknown): string => (typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value));

export function CelParamControl({ field, value, onChange, onLocalError, disabled, testId, nodeId, inputFields }: ParamControlProps) {
  return (
    <CelEditor
      value={asText(value)}
      onChange={(text) => onChange(text === "" ? undefined : text)}
      nodeId={nodeId}
      param={field.key}
      fields={inputFields}
      readOnly={disabled}
      ariaLabel={`${field.label}: CEL expression`}
      inputTestId={testId}
      onTooLong={onLocalError}
    />
  );
}

export function CodeParamControl(props: ParamControlProps) {
  const { field, value, onChange, onLocalError, disabled, testId, nodeId, operatorType } = props;
  if (operatorType !== "process.custom") {
    // Multi-line text of another operator: not TypeScript; keep a plain text area.
    return (
      <textarea className="kf-input kf-input--mono" rows={10} value={asText(value)} disabled={disabled} data-testid={testId} id={props.inputId} spellCheck={false} onChange={(e) => {
          const text = e.target.value;
          if (fits("code", text, onLocalError)) onChange(text === "" ? undefined : text);
        }} />
    );
  }
  const text = typeof value === "string" ? value : typeof field.default === "string" ? field.default : "";
  return <CustomCodeEditor value={text} onChange={(next) => onChange(next === "" ? undefined : next)} nodeId={nodeId} readOnly={disabled} inputTestId={testId} onTooLong={onLocalError} />;
}

export const expressionParamEditors: ParamEditors = { cel: CelParamControl, code: CodeParamControl };
