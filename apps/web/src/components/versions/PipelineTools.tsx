"use client";
// <PipelineToolsProvider>: what the version history, the diff, the dry run and the deploy button
// share for the pipeline on screen (tools-context.tsx), and what the canvas reads to mark its nodes
// (changed since the deployed version; dry-run counts per port). It also mounts the diff dialog.
import { useCallback, useMemo, useState, type ReactNode } from "react";
import type { PipelineDocument } from "@keyflow/operators";
import { deployPlan, deployedVersion } from "../../diff/deploy-plan";
import type { PipelineDetail } from "../../trpc/types";
import { DiffDialog } from "../diff/DiffDialog";
import { Ctx, DEFAULT_SAMPLE, type DiffSide, type DryRunState, type PanelTab, type PipelineToolsValue } from "./tools-context";
import "./tools.css";

export * from "./tools-context";

export function PipelineToolsProvider({
  pipeline,
  document,
  shown,
  onOpenVersion,
  onSelectPipeline,
  onShowPanel,
  children,
}: {
  pipeline: PipelineDetail;
  document: PipelineDocument;
  shown: DiffSide;
  onOpenVersion: (side: DiffSide) => void;
  onSelectPipeline: (id: string) => void;
  /** The tools want a panel shown (a dry-run count was clicked): for a Workspace that owns the side panel's tabs. */
  onShowPanel?: (panel: PanelTab) => void;
  children: ReactNode;
}) {
  const [diff, setDiff] = useState<{ from: DiffSide; to: DiffSide } | null>(null);
  const [dryRun, setDryRunState] = useState<DryRunState>({ status: "idle", sample: DEFAULT_SAMPLE });
  const [tab, setTab] = useState<PanelTab>("history");
  // A dry run belongs to one pipeline: forget it when another is shown.
  const [dryRunOf, setDryRunOf] = useState(pipeline.id);
  if (dryRunOf !== pipeline.id) {
    setDryRunOf(pipeline.id);
    setDryRunState({ status: "idle", sample: DEFAULT_SAMPLE });
    setDiff(null);
  }

  const running = useMemo(() => deployedVersion(pipeline.versions, pipeline.deployments), [pipeline.versions, pipeline.deployments]);
  const newest = pipeline.versions[0];
  const deploy = useMemo(() => deployPlan(newest?.graph ?? pipeline.draft, running), [newest, pipeline.draft, running]);
  const canvasChanges = useMemo(() => deployPlan(document, running), [document, running]);

  const setDryRun = useCallback((update: (s: DryRunState) => DryRunState) => setDryRunState(update), []);
  const showTab = useCallback(
    (next: PanelTab) => {
      setTab(next);
      onShowPanel?.(next);
    },
    [onShowPanel],
  );
  const selectPort = useCallback(
    (nodeId: string, port: string) => {
      setDryRunState((s) => ({ ...s, selected: { nodeId, port } }));
      showTab("dryrun");
    },
    [showTab],
  );
  const openDiff = useCallback((from: DiffSide, to: DiffSide) => setDiff({ from, to }), []);
  const closeDiff = useCallback(() => setDiff(null), []);

  const value = useMemo<PipelineToolsValue>(
    () => ({
      pipeline,
      document,
      shown,
      deploy,
      canvasChanges,
      openVersion: onOpenVersion,
      selectPipeline: onSelectPipeline,
      diff,
      openDiff,
      closeDiff,
      dryRun,
      setDryRun,
      selectPort,
      tab,
      setTab: showTab,
    }),
    [pipeline, document, shown, deploy, canvasChanges, onOpenVersion, onSelectPipeline, diff, openDiff, closeDiff, dryRun, setDryRun, selectPort, tab, showTab],
  );
  return (
    <Ctx.Provider value={value}>
      {children}
      <DiffDialog />
    </Ctx.Provider>
  );
}

