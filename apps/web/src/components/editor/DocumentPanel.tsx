"use client";
// The selected document as JSON in Monaco. Monaco touches `window` when imported, so it is loaded
// only in the browser (ssr: false) and only when this panel renders.
import dynamic from "next/dynamic";
import { useMemo } from "react";
import type { PipelineDocument } from "@keyflow/operators";

const JsonViewer = dynamic(() => import("./JsonViewer").then((m) => m.JsonViewer), {
  ssr: false,
  loading: () => <div className="kf-panel__loading">Loading editor…</div>,
});

export function DocumentPanel({ document, title }: { document: PipelineDocument | null; title: string }) {
  const text = useMemo(() => (document ? `${JSON.stringify(document, null, 2)}\n` : ""), [document]);
  return (
    <div className="kf-docpanel">
      <header className="kf-panel__header">
        <span>Document</span>
        <span className="kf-panel__sub">keyflow.pipeline/v1{title ? ` · ${title}` : ""} · read-only</span>
      </header>
      <div className="kf-panel__body" data-testid="document-editor">
        {document ? <JsonViewer value={text} /> : <div className="kf-panel__loading">Select a pipeline.</div>}
      </div>
    </div>
  );
}
