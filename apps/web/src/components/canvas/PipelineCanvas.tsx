"use client";
// A pipeline document drawn with React Flow. Positions come from the document; when some are
// missing the whole graph is laid out with ELK first. The shared validator runs in the browser on
// the document shown, and its issues are pinned on their nodes and listed in the problems panel.
// Read-only for now: nodes can be moved to look closer, but nothing is connected or saved (the
// designer, issue 5, adds editing).
import { Background, BackgroundVariant, Controls, MarkerType, MiniMap, ReactFlow, useEdgesState, useNodesState, type DefaultEdgeOptions, type NodeTypes } from "@xyflow/react";
import { useEffect, useMemo, useState } from "react";
import { validatePipeline, type Issue, type PipelineDocument } from "@keyflow/operators";
import type { OperatorView } from "../../catalog/operator-view";
import { documentToFlow, missingPositions, type CatalogLookup, type FlowGraph, type OperatorFlowNode, type PipelineFlowEdge } from "../../canvas/flow";
import { issuesByNode, type NodeIssues } from "../../canvas/issues";
import { layoutGraph } from "../../canvas/layout";
import { OperatorNode } from "./OperatorNode";
import { ProblemsPanel } from "./ProblemsPanel";

const nodeTypes: NodeTypes = { operator: OperatorNode };
const defaultEdgeOptions: DefaultEdgeOptions = { type: "smoothstep", markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 } };
/** Side-output edges (dashed in globals.css) get an arrowhead in the same colour (--kf-side). */
const sideMarker = { type: MarkerType.ArrowClosed, width: 16, height: 16, color: "#fbbf24" } as const;
const styleEdge = (edge: PipelineFlowEdge): PipelineFlowEdge => (edge.data?.side ? { ...edge, markerEnd: sideMarker } : edge);
const CATEGORY_COLOR: Record<OperatorFlowNode["data"]["category"], string> = {
  source: "#2dd4bf",
  keying: "#a78bfa",
  transform: "#60a5fa",
  window: "#fbbf24",
  pattern: "#fb7185",
  enrichment: "#22d3ee",
  custom: "#94a3b8",
  sink: "#4ade80",
  unknown: "#f87171",
};
const minimapColor = (node: OperatorFlowNode): string => CATEGORY_COLOR[node.data.category];

type Layout = { status: "pending" } | { status: "ready"; graph: FlowGraph } | { status: "failed"; message: string };

/** The document's graph with positions: synchronous when the document has them all. */
function useLaidOutGraph(document: PipelineDocument, lookup: CatalogLookup, issues: ReadonlyMap<string, NodeIssues>): Layout {
  const placed = useMemo(() => (missingPositions(document).length === 0 ? documentToFlow(document, lookup, { issues }) : null), [document, lookup, issues]);
  const [laidOut, setLaidOut] = useState<Layout>({ status: "pending" });

  useEffect(() => {
    if (placed) return;
    let cancelled = false;
    const draft = documentToFlow(document, lookup);
    layoutGraph(draft.nodes, draft.edges).then(
      (positions) => !cancelled && setLaidOut({ status: "ready", graph: documentToFlow(document, lookup, { positions, issues }) }),
      (error: unknown) => !cancelled && setLaidOut({ status: "failed", message: error instanceof Error ? error.message : String(error) }),
    );
    return () => {
      cancelled = true;
    };
  }, [placed, document, lookup, issues]);

  return placed ? { status: "ready", graph: placed } : laidOut;
}

export function PipelineCanvas({ document, operators }: { document: PipelineDocument; operators: readonly OperatorView[] }) {
  const lookup = useMemo<CatalogLookup>(() => {
    const byType = new Map(operators.map((op) => [op.type, op]));
    return (type) => byType.get(type);
  }, [operators]);
  const issues = useMemo(() => validatePipeline(document).issues, [document]);
  const pinned = useMemo(() => issuesByNode(issues), [issues]);
  const layout = useLaidOutGraph(document, lookup, pinned);

  if (layout.status === "failed") return <div className="kf-empty kf-empty--error">Auto-layout failed: {layout.message}</div>;
  if (layout.status === "pending") return <div className="kf-empty">Laying out…</div>;
  if (layout.graph.nodes.length === 0) return <div className="kf-empty">This pipeline has no nodes yet.</div>;
  return <FlowView graph={layout.graph} issues={issues} />;
}

function FlowView({ graph, issues }: { graph: FlowGraph; issues: readonly Issue[] }) {
  const [nodes, , onNodesChange] = useNodesState<OperatorFlowNode>(graph.nodes);
  const [edges, , onEdgesChange] = useEdgesState<PipelineFlowEdge>(graph.edges.map(styleEdge));
  return (
    <div className="kf-canvas" data-testid="canvas">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        nodeTypes={nodeTypes}
        defaultEdgeOptions={defaultEdgeOptions}
        nodesConnectable={false}
        colorMode="dark"
        fitView
        fitViewOptions={{ padding: 0.2, maxZoom: 1.1 }}
        minZoom={0.2}
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} />
        <MiniMap<OperatorFlowNode> pannable zoomable nodeColor={minimapColor} nodeStrokeWidth={2} maskColor="rgba(8, 11, 18, 0.7)" />
        <Controls showInteractive={false} />
        <ProblemsPanel issues={issues} />
      </ReactFlow>
    </div>
  );
}
