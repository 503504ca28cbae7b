"use client";
// The pipeline tools' buttons for the top bar: export the document shown, and deploy the newest
// version (its label counts the changes it ships against the running version).
import { DeployButton } from "./DeployButton";
import { ExportButton } from "./ExportButton";

export function PipelineToolbar() {
  return (
    <div className="kf-pipelinebar" data-testid="pipeline-toolbar">
      <ExportButton />
      <DeployButton />
    </div>
  );
}
