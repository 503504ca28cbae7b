// The canvas draws the document (documentToFlow), but React Flow also keeps state of its own on
// each node: its measured size, whether it is being dragged. Reconciling merges a freshly drawn
// graph into the nodes React Flow holds: what the document says wins, React Flow's own fields are
// kept, and unchanged nodes keep their identity so memoised node components do not re-render.
// Framework-free (types only from @xyflow/react).
import type { OperatorFlowNode, PipelineFlowEdge } from "./flow";

const sameJson = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(a) === JSON.stringify(b);

export function reconcileNodes(previous: readonly OperatorFlowNode[], drawn: readonly OperatorFlowNode[], selected: ReadonlySet<string>): OperatorFlowNode[] {
  const byId = new Map(previous.map((n) => [n.id, n]));
  let changed = previous.length !== drawn.length;
  const next = drawn.map((node, i) => {
    const prev = byId.get(node.id);
    const isSelected = selected.has(node.id);
    if (!prev) {
      changed = true;
      return { ...node, selected: isSelected };
    }
    const data = sameJson(prev.data, node.data) ? prev.data : node.data;
    // A node being dragged stays where the pointer has it; the document catches up on drop.
    const position = prev.dragging || (prev.position.x === node.position.x && prev.position.y === node.position.y) ? prev.position : node.position;
    if (data === prev.data && position === prev.position && Boolean(prev.selected) === isSelected && previous[i] === prev) return prev;
    changed = true;
    return { ...prev, data, position, selected: isSelected };
  });
  return changed ? next : (previous as OperatorFlowNode[]);
}

export function reconcileEdges(previous: readonly PipelineFlowEdge[], drawn: readonly PipelineFlowEdge[], selected: ReadonlySet<string>): PipelineFlowEdge[] {
  const byId = new Map(previous.map((e) => [e.id, e]));
  let changed = previous.length !== drawn.length;
  const next = drawn.map((edge, i) => {
    const prev = byId.get(edge.id);
    const isSelected = selected.has(edge.id);
    if (prev && Boolean(prev.selected) === isSelected && sameJson({ ...prev, selected: undefined }, { ...edge, selected: undefined })) {
      if (previous[i] !== prev) changed = true;
      return prev;
    }
    changed = true;
    return { ...edge, selected: isSelected };
  });
  return changed ? next : (previous as PipelineFlowEdge[]);
}
