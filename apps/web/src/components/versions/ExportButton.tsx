"use client";
// Export the document on the canvas as a keyflow.pipeline/v1 file (what `keyflow run` reads).
import { sideLabel, usePipelineTools } from "./tools-context";
import { exportFileName, serializePipeline } from "./pipeline-file";

export function ExportButton() {
  const { document, shown } = usePipelineTools();
  const download = () => {
    const blob = new Blob([serializePipeline(document)], { type: "application/json" });
    const url = URL.createObjectURL(blob);
    const a = window.document.createElement("a");
    a.href = url;
    a.download = exportFileName(document, shown === "draft" ? "draft" : sideLabel(shown));
    window.document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1_000);
  };
  return (
    <button type="button" className="kf-button kf-button--small" onClick={download} data-testid="export-pipeline" title="Download this document as a keyflow.pipeline/v1 file">
      Export
    </button>
  );
}
