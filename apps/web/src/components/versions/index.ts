// Versions, diff, import/export, templates, deploy plan and dry run: what the Workspace mounts.
//
//   <PipelineToolsProvider pipeline document shown onOpenVersion onSelectPipeline>
//     <PipelineToolbar />                 top bar: Export, Deploy (N changes)
//     <PipelineSidePanel />               tabs: History (open, diff with…), Dry run; the diff dialog
//     canvas: OperatorNode renders <NodeOverlayBadges nodeId /> (changed since deploy, dry-run counts)
//   </PipelineToolsProvider>
//   <NewPipelineButtons onCreated />      pipeline list header: New from template, Import…
export { PipelineToolsProvider, usePipelineTools, useOptionalPipelineTools, useNodeOverlay, type DiffSide, type PanelTab } from "./PipelineTools";
export { PipelineToolbar } from "./PipelineToolbar";
export { PipelineSidePanel } from "./PipelineSidePanel";
export { VersionHistory } from "./VersionHistory";
export { NewPipelineButtons, TemplateDialog } from "./TemplateMenu";
export { ImportDialog } from "./ImportDialog";
export { ExportButton } from "./ExportButton";
export { DeployButton, useDeployButton } from "./DeployButton";
export { NodeOverlayBadges } from "../dryrun/NodeOverlayBadges";
export { DryRunPanel } from "../dryrun/DryRunPanel";
export { DiffDialog } from "../diff/DiffDialog";
export { DiffView } from "../diff/DiffView";
