"use client";
// The pipeline canvas of the editor: the document (EditorContext) drawn with React Flow.
//
// - Operators dragged from the palette (HTML5 drag and drop) land where they are dropped.
// - Handles connect by dragging; `isValidConnection` asks the shared validator's canConnect, so
//   a connection that cannot work is refused while dragging, and the reason shows beside the
//   cursor (ConnectionLine) and, when dropped anyway, in a toast.
// - Moves are committed to the document when a drag ends (one undo step per drag); selection is
//   the store's; deleting goes through the editor's own shortcuts (deleteKeyCode is off here).
import {
  Background,
  BackgroundVariant,
  ControlButton,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  applyEdgeChanges,
  applyNodeChanges,
  useReactFlow,
  type Connection,
  type DefaultEdgeOptions,
  type Edge,
  type EdgeChange,
  type FinalConnectionState,
  type NodeChange,
  type NodeTypes,
  type XYPosition,
} from "@xyflow/react";
import { useCallback, useLayoutEffect, useMemo, useState, type DragEvent } from "react";
import { canConnect } from "@keyflow/operators";
import { documentToFlow, type OperatorFlowNode, type PipelineFlowEdge } from "../../canvas/flow";
import { edgeEnd, moveNodes } from "../../canvas/graph-edit";
import { NODE_WIDTH } from "../../canvas/layout";
import { reconcileEdges, reconcileNodes } from "../../canvas/reconcile";
import { useLiveEdges } from "../live/live-edges";
import { OPERATOR_DRAG_TYPE } from "../palette/drag";
import { ConnectCheckContext, type ConnectCheck } from "./connect-check";
import { ConnectionLine } from "./ConnectionLine";
import { useEditor, useEditorState, useEditorUi, useValidation } from "./EditorContext";
import { OperatorNode } from "./OperatorNode";
import { useToast } from "./Toasts";

const nodeTypes: NodeTypes = { operator: OperatorNode };
const defaultEdgeOptions: DefaultEdgeOptions = { type: "smoothstep", markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 } };
/** Side-output edges (dashed in globals.css) get an arrowhead in the same colour (--kf-side). */
const sideMarker = { type: MarkerType.ArrowClosed, width: 16, height: 16, color: "#fbbf24" } as const;
const styleEdge = (edge: PipelineFlowEdge): PipelineFlowEdge => (edge.data?.side ? { ...edge, markerEnd: sideMarker } : edge);

export const CATEGORY_COLOR: Record<OperatorFlowNode["data"]["category"], string> = {
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
// Props React Flow copies into its store whenever they change identity: constants, so a render
// never overwrites what a command queued (rf.fitView's own options).
const FIT_VIEW_OPTIONS = { padding: 0.2, maxZoom: 1.1 } as const;
const CONTROLS_FIT_OPTIONS = { padding: 0.2, maxZoom: 1.1, duration: 300 } as const;
const SNAP_GRID: [number, number] = [8, 8];
const MINIMAP_STYLE = { width: 168, height: 112 } as const;

const connectionEnds = (c: Pick<Connection, "source" | "sourceHandle" | "target" | "targetHandle">) => ({
  from: edgeEnd(c.source, c.sourceHandle, "from"),
  to: edgeEnd(c.target, c.targetHandle, "to"),
});

export function EditorCanvas() {
  const { ready } = useEditorUi();
  if (!ready) return <div className="kf-empty">Laying out…</div>;
  return <Canvas />;
}

function Canvas() {
  const { store, lookup, readOnly, commands, canvasRef } = useEditor();
  const doc = useEditorState((s) => s.doc);
  const selection = useEditorState((s) => s.selection);
  const validation = useValidation();
  const toast = useToast();
  const rf = useReactFlow<OperatorFlowNode, PipelineFlowEdge>();

  const graph = useMemo(() => documentToFlow(doc, lookup, { issues: validation.pinned, portKinds: validation.portKinds }), [doc, lookup, validation.pinned, validation.portKinds]);
  const drawnEdges = useMemo(() => graph.edges.map(styleEdge), [graph.edges]);
  const selectedNodes = useMemo(() => new Set(selection.nodes), [selection.nodes]);
  const selectedEdges = useMemo(() => new Set(selection.edges), [selection.edges]);

  // Fit the view to a document that has nodes when it opens; an empty canvas keeps zoom 1, so
  // the first operators dropped on it do not make the view jump.
  const [fitOnOpen] = useState(() => doc.nodes.length > 0);
  const [nodes, setNodes] = useState<OperatorFlowNode[]>(() => reconcileNodes([], graph.nodes, selectedNodes));
  const [edges, setEdges] = useState<PipelineFlowEdge[]>(() => reconcileEdges([], drawnEdges, selectedEdges));
  useLayoutEffect(() => setNodes((prev) => reconcileNodes(prev, graph.nodes, selectedNodes)), [graph.nodes, selectedNodes]);
  useLayoutEffect(() => setEdges((prev) => reconcileEdges(prev, drawnEdges, selectedEdges)), [drawnEdges, selectedEdges]);
  // A running deployment's throughput on the edges (label, stroke width); the edges' state stays as is.
  const shownEdges = useLiveEdges(edges);

  const onNodesChange = useCallback(
    (changes: NodeChange<OperatorFlowNode>[]) => {
      setNodes((current) => applyNodeChanges(changes, current));
      const moved = new Map<string, XYPosition>();
      const selected = new Set(store.getState().selection.nodes);
      let selectionChanged = false;
      for (const change of changes) {
        if (change.type === "position" && change.position && !change.dragging) moved.set(change.id, change.position);
        if (change.type === "select") {
          selectionChanged = true;
          if (change.selected) selected.add(change.id);
          else selected.delete(change.id);
        }
      }
      // A drag that ended, or nodes nudged with the arrow keys (coalesced into one undo step).
      if (moved.size > 0) store.edit((d) => moveNodes(d, moved), { group: `move:${[...moved.keys()].sort().join(",")}` });
      if (selectionChanged) store.select({ nodes: [...selected], edges: store.getState().selection.edges });
    },
    [store],
  );

  const onEdgesChange = useCallback(
    (changes: EdgeChange<PipelineFlowEdge>[]) => {
      setEdges((current) => applyEdgeChanges(changes, current));
      const selected = new Set(store.getState().selection.edges);
      let selectionChanged = false;
      for (const change of changes) {
        if (change.type !== "select") continue;
        selectionChanged = true;
        if (change.selected) selected.add(change.id);
        else selected.delete(change.id);
      }
      if (selectionChanged) store.select({ nodes: store.getState().selection.nodes, edges: [...selected] });
    },
    [store],
  );

  const check = useCallback<ConnectCheck>((from, to) => canConnect(store.getState().doc, from, to), [store]);

  const isValidConnection = useCallback(
    (c: Connection | Edge) => {
      const { from, to } = connectionEnds({ source: c.source, target: c.target, sourceHandle: c.sourceHandle ?? null, targetHandle: c.targetHandle ?? null });
      return check(from, to).ok;
    },
    [check],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const { from, to } = connectionEnds(c);
      commands.connect(from, to);
    },
    [commands],
  );

  // Dropped on a handle that refused it: say why (the hint beside the cursor is gone by now).
  const onConnectEnd = useCallback(
    (_event: MouseEvent | TouchEvent, state: FinalConnectionState) => {
      if (state.isValid !== false || !state.fromNode || !state.fromHandle || !state.toNode || !state.toHandle) return;
      if (state.fromHandle.type === state.toHandle.type) return;
      const out = state.fromHandle.type === "source" ? { node: state.fromNode, handle: state.fromHandle } : { node: state.toNode, handle: state.toHandle };
      const into = state.fromHandle.type === "source" ? { node: state.toNode, handle: state.toHandle } : { node: state.fromNode, handle: state.fromHandle };
      const { from, to } = connectionEnds({ source: out.node.id, sourceHandle: out.handle.id ?? null, target: into.node.id, targetHandle: into.handle.id ?? null });
      const result = check(from, to);
      if (!result.ok) toast({ tone: "error", title: `Cannot connect ${from} → ${to}`, message: result.reason });
    },
    [check, toast],
  );

  const onDragOver = useCallback(
    (e: DragEvent) => {
      if (readOnly || !e.dataTransfer.types.includes(OPERATOR_DRAG_TYPE)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    },
    [readOnly],
  );

  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(OPERATOR_DRAG_TYPE);
      if (!type || readOnly) return;
      e.preventDefault();
      const at = rf.screenToFlowPosition({ x: e.clientX, y: e.clientY });
      // The pointer holds the node by its header, as it held the palette entry.
      commands.addOperator(type, { x: at.x - NODE_WIDTH / 2, y: at.y - 22 });
    },
    [commands, readOnly, rf],
  );

  const onNodeDoubleClick = useCallback((_: unknown, node: OperatorFlowNode) => commands.focusNode(node.id), [commands]);

  return (
    <ConnectCheckContext.Provider value={readOnly ? null : check}>
      <div className={`kf-canvas${readOnly ? " kf-canvas--readonly" : ""}`} data-testid="canvas" ref={canvasRef} onDragOver={onDragOver} onDrop={onDrop}>
        <ReactFlow<OperatorFlowNode, PipelineFlowEdge>
          nodes={nodes}
          edges={shownEdges}
          onNodesChange={onNodesChange}
          onEdgesChange={onEdgesChange}
          onConnect={onConnect}
          onConnectEnd={onConnectEnd}
          isValidConnection={isValidConnection}
          onNodeDoubleClick={onNodeDoubleClick}
          nodeTypes={nodeTypes}
          defaultEdgeOptions={defaultEdgeOptions}
          connectionLineComponent={ConnectionLine}
          connectionRadius={28}
          nodesConnectable={!readOnly}
          nodesDraggable={!readOnly}
          deleteKeyCode={null}
          colorMode="dark"
          fitView={fitOnOpen}
          fitViewOptions={FIT_VIEW_OPTIONS}
          minZoom={0.2}
          maxZoom={2}
          snapToGrid
          snapGrid={SNAP_GRID}
        >
          <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} />
          <MiniMap<OperatorFlowNode> pannable zoomable nodeColor={minimapColor} nodeStrokeWidth={2} maskColor="rgba(8, 11, 18, 0.7)" style={MINIMAP_STYLE} ariaLabel="Minimap" />
          <Controls showInteractive={false} fitViewOptions={CONTROLS_FIT_OPTIONS}>
            {!readOnly ? (
              <ControlButton onClick={() => void commands.autoLayout()} title="Auto-layout (Shift+L)" aria-label="Auto-layout">
                <svg viewBox="0 0 16 16" aria-hidden="true">
                  <path d="M2 3h4v3H2zM10 2h4v3h-4zM10 10h4v3h-4zM6 4.5h2.5v6H10M8.5 3.5H10" fill="none" stroke="currentColor" strokeWidth="1.3" />
                </svg>
              </ControlButton>
            ) : null}
          </Controls>
        </ReactFlow>
        {doc.nodes.length === 0 ? (
          <div className="kf-canvas__empty" data-testid="canvas-empty">
            <strong>{readOnly ? "This version has no nodes." : "Start with a source"}</strong>
            {readOnly ? null : (
              <span>
                Drag operators here from the palette, or press <kbd>/</kbd>, type a name and press <kbd>Enter</kbd>. Connect them by dragging from an output
                (right) to an input (left).
              </span>
            )}
          </div>
        ) : null}
      </div>
    </ConnectCheckContext.Provider>
  );
}
