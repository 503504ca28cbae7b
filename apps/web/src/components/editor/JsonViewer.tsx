"use client";
import Editor from "@monaco-editor/react";
import { KEYFLOW_THEME } from "./monaco";

export function JsonViewer({ value }: { value: string }) {
  return (
    <Editor
      value={value}
      language="json"
      theme={KEYFLOW_THEME}
      loading={<div className="kf-panel__loading">Loading editor…</div>}
      options={{
        readOnly: true,
        domReadOnly: true,
        minimap: { enabled: false },
        fontSize: 12,
        lineNumbersMinChars: 3,
        scrollBeyondLastLine: false,
        automaticLayout: true,
        folding: true,
        renderLineHighlight: "none",
        wordWrap: "off",
        tabSize: 2,
      }}
    />
  );
}
