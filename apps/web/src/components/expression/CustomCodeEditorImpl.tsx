"use client";
// Monaco's TypeScript for a process.custom node's code, with the context API's declarations loaded
// (monaco-languages.ts): `ctx.` completes, and a wrong call or a missing export is a type error.
import Editor from "@monaco-editor/react";
import { KEYFLOW_THEME } from "../editor/monaco";
import { useRef } from "react";
import { guardPaste, limitedOnChange } from "./length-guard";
import { registerKeyflowLanguages, type monaco } from "./monaco-languages";
import type { CustomCodeEditorProps } from "./CustomCodeEditor";

registerKeyflowLanguages();

export function customCodePath(nodeId: string): string {
  return `file:///keyflow/process-custom/${encodeURIComponent(nodeId)}.ts`;
}

export function CustomCodeEditorImpl({ value, onChange, nodeId, height = 360, readOnly = false, inputTestId, onTooLong }: CustomCodeEditorProps) {
  const editorRef = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);
  return (
    <Editor
      path={customCodePath(nodeId)}
      language="typescript"
      theme={KEYFLOW_THEME}
      value={value}
      height={height}
      onChange={limitedOnChange("code", () => editorRef.current, value, onChange, onTooLong)}
      onMount={(editor) => {
        editorRef.current = editor;
        guardPaste(editor, "code", (message) => onTooLong?.(message));
        if (inputTestId) editor.getDomNode()?.querySelector("textarea")?.setAttribute("data-testid", inputTestId);
      }}
      loading={<div className="kf-panel__loading">Loading editor…</div>}
      options={{
        readOnly,
        ariaLabel: `TypeScript code of node ${nodeId}`,
        minimap: { enabled: false },
        fontSize: 12,
        lineNumbersMinChars: 3,
        scrollBeyondLastLine: false,
        automaticLayout: true,
        fixedOverflowWidgets: true,
        tabSize: 2,
        renderLineHighlight: "line",
        // A real text area, not Chromium's EditContext div: keyboard handlers around the editor (React
        // Flow takes Space to pan unless the key goes to an input) then leave typing alone.
        editContext: false,
      }}
    />
  );
}
