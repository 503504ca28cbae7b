"use client";
// Two versions of a pipeline drawn as one read-only graph: added nodes and edges in green, removed
// ones in red and ghosted where they were, changed nodes in amber (the classes come from
// diffDecorations; tools.css colours them). The nodes are the canvas's own OperatorNode.
import { Background, BackgroundVariant, Controls, MarkerType, ReactFlow, ReactFlowProvider, useReactFlow, type DefaultEdgeOptions, type NodeTypes } from "@xyflow/react";
import { useEffect, useMemo, useState } from "react";
import type { PipelineDocumentInput } from "@keyflow/operators";
import type { OperatorView } from "../../catalog/operator-view";
import { documentToFlow, missingPositions, type CatalogLookup, type FlowGraph, type OperatorFlowNode, type PipelineFlowEdge } from "../../canvas/flow";
import { layoutGraph } from "../../canvas/layout";
import { diffDecorations, type DiffDecorations, type DiffStatus } from "../../diff/diff";
import { OperatorNode } from "../canvas/OperatorNode";
import { WithoutNodeOverlays } from "../versions/tools-context";

const nodeTypes: NodeTypes = { operator: OperatorNode };
const defaultEdgeOptions: DefaultEdgeOptions = { type: "smoothstep" };
const EDGE_COLOR: Record<DiffStatus, string> = { added: "#4ade80", removed: "#f87171", changed: "#fbbf24", unchanged: "#6b7791" };

/** The merged graph as React Flow nodes and edges, each with its diff class. */
export function decorateFlow(graph: FlowGraph, deco: DiffDecorations): FlowGraph {
  const nodes: OperatorFlowNode[] = graph.nodes.map((n) => {
    const status = deco.nodes[n.id] ?? "unchanged";
    return { ...n, className: deco.className(status), draggable: false, connectable: false, deletable: false, data: { ...n.data } };
  });
  const edges: PipelineFlowEdge[] = graph.edges.map((e) => {
    const status = deco.edges[e.id] ?? "unchanged";
    const className = [e.className, deco.className(status)].filter(Boolean).join(" ");
    return { ...e, className, deletable: false, markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16, color: EDGE_COLOR[status] }, data: e.data };
  });
  return { nodes, edges };
}

function useMergedGraph(before: PipelineDocumentInput, after: PipelineDocumentInput, operators: readonly OperatorView[]) {
  const deco = useMemo(() => diffDecorations(before, after), [before, after]);
  const lookup = useMemo<CatalogLookup>(() => {
    const byType = new Map(operators.map((op) => [op.type, op]));
    return (type) => byType.get(type);
  }, [operators]);
  const placed = useMemo(() => (missingPositions(deco.merged).length === 0 ? decorateFlow(documentToFlow(deco.merged, lookup), deco) : null), [deco, lookup]);
  const [laidOut, setLaidOut] = useState<FlowGraph | null>(null);
  useEffect(() => {
    if (placed) return;
    let cancelled = false;
    const draft = documentToFlow(deco.merged, lookup);
    layoutGraph(draft.nodes, draft.edges).then(
      (positions) => !cancelled && setLaidOut(decorateFlow(documentToFlow(deco.merged, lookup, { positions }), deco)),
      () => !cancelled && setLaidOut(decorateFlow(draft, deco)),
    );
    return () => {
      cancelled = true;
    };
  }, [placed, deco, lookup]);
  return { deco, graph: placed ?? laidOut };
}

function FocusOn({ nodeId }: { nodeId: string | undefined }) {
  const flow = useReactFlow();
  useEffect(() => {
    if (nodeId) void flow.fitView({ nodes: [{ id: nodeId }], duration: 250, maxZoom: 1.2, padding: 0.8 });
  }, [flow, nodeId]);
  return null;
}

export function DiffView({ before, after, operators, focusNodeId }: { before: PipelineDocumentInput; after: PipelineDocumentInput; operators: readonly OperatorView[]; focusNodeId?: string }) {
  const { graph } = useMergedGraph(before, after, operators);
  if (!graph) return <div className="kf-empty">Laying out…</div>;
  return (
    <WithoutNodeOverlays>
      <ReactFlowProvider>
        <div className="kf-canvas kf-diffview" data-testid="diff-view">
          <ReactFlow
            nodes={graph.nodes}
            edges={graph.edges}
            nodeTypes={nodeTypes}
            defaultEdgeOptions={defaultEdgeOptions}
            nodesDraggable={false}
            nodesConnectable={false}
            elementsSelectable={false}
            edgesFocusable={false}
            nodesFocusable={false}
            colorMode="dark"
            fitView
            fitViewOptions={{ padding: 0.15, maxZoom: 1.1 }}
            minZoom={0.2}
            proOptions={{ hideAttribution: true }}
          >
            <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} />
            <Controls showInteractive={false} />
            <FocusOn nodeId={focusNodeId} />
          </ReactFlow>
        </div>
      </ReactFlowProvider>
    </WithoutNodeOverlays>
  );
}
