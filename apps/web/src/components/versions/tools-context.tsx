"use client";
// The pipeline tools' shared state (see PipelineTools.tsx for the provider): the pipeline on
// screen, the deploy plan, the diff being shown, the dry run and its sample; and what the canvas
// pins on a node (useNodeOverlay), inert outside the provider.
import { createContext, useContext, useMemo, type ReactNode } from "react";
import type { PipelineDocument } from "@keyflow/operators";
import type { DeployPlan } from "../../diff/deploy-plan";
import type { DryRunResult } from "../../server/runner-client";
import type { PipelineDetail } from "../../trpc/types";

/** A side of a diff: a version number, or the draft. */
export type DiffSide = number | "draft";

/** The sample chosen in the dry-run panel (kept here, so it survives the panel being closed). */
export interface DryRunSampleChoice {
  mode: "file" | "topic";
  file: { name: string; lines: string[] } | null;
  topic: string;
  lastN: number;
  /** The source node given the sample; undefined: the first one feeding a main input. */
  sourceId: string | undefined;
}

export const DEFAULT_SAMPLE: DryRunSampleChoice = { mode: "file", file: null, topic: "", lastN: 500, sourceId: undefined };

export interface DryRunState {
  status: "idle" | "running" | "done" | "failed";
  sample: DryRunSampleChoice;
  result?: DryRunResult;
  error?: string;
  /** The document the result is for (a later edit makes it stale). */
  document?: PipelineDocument;
  /** The node and port whose records are shown in the table. */
  selected?: { nodeId: string; port: string };
}

export interface PipelineToolsValue {
  pipeline: PipelineDetail;
  /** The document on the canvas (draft or a version). */
  document: PipelineDocument;
  /** The document shown, as a diff side. */
  shown: DiffSide;
  /** What deploying the newest version ships, against the running one. */
  deploy: DeployPlan;
  /** The document on the canvas against the running version: which nodes to mark. */
  canvasChanges: DeployPlan;
  openVersion: (side: DiffSide) => void;
  /** A new pipeline was created (template, import): show it. */
  selectPipeline: (id: string) => void;
  diff: { from: DiffSide; to: DiffSide } | null;
  openDiff: (from: DiffSide, to: DiffSide) => void;
  closeDiff: () => void;
  dryRun: DryRunState;
  setDryRun: (update: (s: DryRunState) => DryRunState) => void;
  selectPort: (nodeId: string, port: string) => void;
  /** The side panel tab the tools want shown (e.g. "dryrun" after clicking a badge). */
  tab: PanelTab;
  setTab: (tab: PanelTab) => void;
}

export type PanelTab = "history" | "dryrun";

export const Ctx = createContext<PipelineToolsValue | null>(null);

export function usePipelineTools(): PipelineToolsValue {
  const v = useContext(Ctx);
  if (!v) throw new Error("usePipelineTools() outside <PipelineToolsProvider>");
  return v;
}

export function useOptionalPipelineTools(): PipelineToolsValue | null {
  return useContext(Ctx);
}

/** A document of the pipeline by diff side. */
export function documentOf(pipeline: PipelineDetail, side: DiffSide): PipelineDocument | undefined {
  if (side === "draft") return pipeline.draft;
  return pipeline.versions.find((v) => v.number === side)?.graph;
}

export function sideLabel(side: DiffSide): string {
  return side === "draft" ? "Draft" : `v${side}`;
}

/** Inside it, canvas nodes pin nothing (the diff view draws its own marks). */
export function WithoutNodeOverlays({ children }: { children: ReactNode }) {
  return <Ctx.Provider value={null}>{children}</Ctx.Provider>;
}

export interface NodeOverlay {
  /** New or changed since the running version (undefined: nothing deployed). */
  changedSince?: number;
  /** Dry-run figures of the node, when a dry run of this document is shown. */
  dryRun?: DryRunResult["nodes"][string];
  selectedPort?: string;
  selectPort: (port: string) => void;
}

const INERT: NodeOverlay = { selectPort: () => {} };

/** What the canvas pins on one node. Inert (nothing to pin) outside the provider. */
export function useNodeOverlay(nodeId: string): NodeOverlay {
  const tools = useContext(Ctx);
  const changed = tools?.canvasChanges.changedNodeIds.includes(nodeId) ?? false;
  const deployedNumber = tools?.canvasChanges.deployed?.number;
  const node = tools?.dryRun.status === "done" ? tools.dryRun.result?.nodes[nodeId] : undefined;
  const selected = tools?.dryRun.selected?.nodeId === nodeId ? tools.dryRun.selected.port : undefined;
  const selectPort = tools?.selectPort;
  return useMemo<NodeOverlay>(() => {
    if (!selectPort) return INERT;
    return {
      ...(changed && deployedNumber !== undefined ? { changedSince: deployedNumber } : {}),
      ...(node ? { dryRun: node } : {}),
      ...(selected !== undefined ? { selectedPort: selected } : {}),
      selectPort: (port: string) => selectPort(nodeId, port),
    };
  }, [changed, deployedNumber, node, selected, selectPort, nodeId]);
}
