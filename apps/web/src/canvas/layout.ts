// Auto-layout with ELK's layered algorithm (elkjs, the bundled build: no worker file to serve,
// runs the same in Node for tests and in the browser). Flow runs left to right; each node's
// ports are fixed in the order the node draws them (main ports first, side outputs below), so
// edges from `late` / `errors` leave from where their handles are.
import ELK, { type ElkExtendedEdge, type ElkNode, type ElkPort } from "elkjs/lib/elk.bundled.js";
import type { XYPosition } from "@xyflow/react";
import type { OperatorNodeData, PipelineFlowEdge } from "./flow";

/** Node geometry; the node component's CSS uses the same numbers (see OperatorNode.module.css). */
export const NODE_WIDTH = 224;
const HEADER_HEIGHT = 52;
const PARAM_ROW_HEIGHT = 18;
const PORT_ROW_HEIGHT = 22;
const PADDING = 12;

export function estimateNodeSize(data: Pick<OperatorNodeData, "params" | "inputs" | "outputs">): { width: number; height: number } {
  const portRows = Math.max(data.inputs.length, data.outputs.length);
  return {
    width: NODE_WIDTH,
    height: HEADER_HEIGHT + data.params.length * PARAM_ROW_HEIGHT + portRows * PORT_ROW_HEIGHT + PADDING,
  };
}

const LAYOUT_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.direction": "RIGHT",
  "elk.layered.spacing.nodeNodeBetweenLayers": "64",
  "elk.spacing.nodeNode": "36",
  "elk.spacing.edgeNode": "24",
  "elk.layered.nodePlacement.strategy": "BRANDES_KOEPF",
  "elk.layered.crossingMinimization.semiInteractive": "true",
  "elk.portConstraints": "FIXED_ORDER",
} as const;

let elk: InstanceType<typeof ELK> | undefined;

interface LayoutNode {
  id: string;
  data: Pick<OperatorNodeData, "params" | "inputs" | "outputs">;
}

function portId(nodeId: string, direction: "in" | "out", port: string): string {
  return `${nodeId}::${direction}::${port}`;
}

/** Positions (top-left corners, as React Flow wants them) for every node. */
export async function layoutGraph(nodes: readonly LayoutNode[], edges: readonly Pick<PipelineFlowEdge, "id" | "source" | "target" | "data">[]): Promise<Map<string, XYPosition>> {
  elk ??= new ELK();
  const known = new Set(nodes.map((n) => n.id));
  const children: ElkNode[] = nodes.map((node) => {
    const size = estimateNodeSize(node.data);
    // FIXED_ORDER reads `port.index`: WEST ports bottom-up, EAST ports top-down (ELK's clockwise order).
    const ports: ElkPort[] = [
      ...node.data.inputs.map((p, i, all) => ({ id: portId(node.id, "in", p.id), layoutOptions: { "elk.port.side": "WEST", "elk.port.index": String(all.length - 1 - i) } })),
      ...node.data.outputs.map((p, i) => ({ id: portId(node.id, "out", p.id), layoutOptions: { "elk.port.side": "EAST", "elk.port.index": String(i) } })),
    ];
    return { id: node.id, width: size.width, height: size.height, ports };
  });
  const elkEdges: ElkExtendedEdge[] = edges
    .filter((e) => known.has(e.source) && known.has(e.target))
    .map((e) => ({
      id: e.id,
      sources: [e.data ? portId(e.source, "out", e.data.sourcePort) : e.source],
      targets: [e.data ? portId(e.target, "in", e.data.targetPort) : e.target],
    }));
  const result = await elk.layout({ id: "root", layoutOptions: { ...LAYOUT_OPTIONS }, children, edges: elkEdges });
  const positions = new Map<string, XYPosition>();
  for (const child of result.children ?? []) positions.set(child.id, { x: child.x ?? 0, y: child.y ?? 0 });
  return positions;
}
