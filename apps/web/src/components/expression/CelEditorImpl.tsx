"use client";
// Monaco for one CEL expression param (browser only; see CelEditor.tsx for the wrapper). A model
// per node and param, completion of the record's fields, and markers from the engine's own
// checker on every change: the errors the validator and the runner would report, where they are.
import Editor, { type OnMount } from "@monaco-editor/react";
import { useCallback, useEffect, useRef } from "react";
import { KEYFLOW_THEME } from "../editor/monaco";
import { CEL_LANGUAGE_ID, celMarkers } from "./cel-language";
import { guardPaste, limitedOnChange } from "./length-guard";
import { celModelFields, monaco, registerKeyflowLanguages } from "./monaco-languages";
import type { CelEditorProps } from "./CelEditor";

registerKeyflowLanguages();

const MARKER_OWNER = "keyflow-cel";
const LINE_HEIGHT = 19;
const SEVERITY = { error: monaco.MarkerSeverity.Error, warning: monaco.MarkerSeverity.Warning } as const;

export function celModelPath(nodeId: string, param: string): string {
  return `keyflow://cel/${encodeURIComponent(nodeId)}/${encodeURIComponent(param)}.cel`;
}

export function CelEditorImpl({ value, onChange, nodeId, param, fields, maxLines = 6, readOnly = false, ariaLabel, onValidate, inputTestId, onTooLong }: CelEditorProps) {
  const path = celModelPath(nodeId, param);
  const editorRef = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);
  const hostRef = useRef<HTMLDivElement | null>(null);
  const fieldsKey = fields ? fields.join("\u0000") : "\u0001unknown";

  // The fields completion offers for this model.
  useEffect(() => {
    celModelFields.set(path, fields);
    return () => {
      celModelFields.delete(path);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- fieldsKey stands for fields
  }, [path, fieldsKey]);

  const check = useCallback(
    (text: string) => {
      const model = monaco.editor.getModel(monaco.Uri.parse(path));
      const markers = celMarkers(text, { nodeId, param }, fields);
      if (model) monaco.editor.setModelMarkers(model, MARKER_OWNER, markers.map((m) => ({ ...m, severity: SEVERITY[m.severity], source: "CEL" })));
      onValidate?.(markers);
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps -- fieldsKey stands for fields
    [path, nodeId, param, fieldsKey, onValidate],
  );

  // Re-check when the text changes from outside (undo on the canvas) or the fields change.
  useEffect(() => {
    if (editorRef.current) check(value);
  }, [value, check]);

  const fit = useCallback(() => {
    const editor = editorRef.current;
    const host = hostRef.current;
    if (!editor || !host) return;
    const height = Math.min(maxLines * LINE_HEIGHT + 8, Math.max(LINE_HEIGHT + 8, editor.getContentHeight()));
    host.style.height = `${height}px`;
    editor.layout();
  }, [maxLines]);

  const onMount: OnMount = (editor) => {
    editorRef.current = editor;
    if (inputTestId) editor.getDomNode()?.querySelector("textarea")?.setAttribute("data-testid", inputTestId);
    guardPaste(editor, "expression", (message) => onTooLong?.(message));
    editor.onDidContentSizeChange(fit);
    fit();
    check(editor.getValue());
  };

  return (
    <div ref={hostRef} className="kf-cel__host" style={{ height: LINE_HEIGHT + 8 }}>
      <Editor
        path={path}
        language={CEL_LANGUAGE_ID}
        theme={KEYFLOW_THEME}
        value={value}
        onChange={limitedOnChange("expression", () => editorRef.current, value, onChange, onTooLong)}
        onMount={onMount}
        loading={<div className="kf-cel__loading">{value}</div>}
        options={{
          readOnly,
          ariaLabel: ariaLabel ?? `CEL expression ${param} of node ${nodeId}`,
          minimap: { enabled: false },
          lineNumbers: "off",
          glyphMargin: false,
          folding: false,
          lineDecorationsWidth: 6,
          lineNumbersMinChars: 0,
          renderLineHighlight: "none",
          overviewRulerLanes: 0,
          hideCursorInOverviewRuler: true,
          scrollBeyondLastLine: false,
          wordWrap: "on",
          wrappingIndent: "same",
          fontSize: 13,
          lineHeight: LINE_HEIGHT,
          padding: { top: 4, bottom: 4 },
          scrollbar: { vertical: "auto", horizontal: "hidden", alwaysConsumeMouseWheel: false },
          automaticLayout: true,
          fixedOverflowWidgets: true,
          suggestOnTriggerCharacters: true,
          quickSuggestions: { other: true, strings: false, comments: false },
          tabCompletion: "on",
          contextmenu: false,
          // A real text area, not Chromium's EditContext div: keyboard handlers around the editor (React
          // Flow takes Space to pan unless the key goes to an input) then leave typing alone.
          editContext: false,
        }}
      />
    </div>
  );
}
