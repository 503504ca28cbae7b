"use client";
// While the analyst drags a connection, every handle says whether it would take it: the nodes ask
// the shared validator's canConnect through this context. The read-only canvas provides none, so
// its handles stay neutral.
import { useConnection } from "@xyflow/react";
import { createContext, useContext } from "react";
import type { ConnectResult } from "@keyflow/operators";
import { edgeEnd } from "../../canvas/graph-edit";

export type ConnectCheck = (from: string, to: string) => ConnectResult;

export const ConnectCheckContext = createContext<ConnectCheck | null>(null);

/** Where the connection being dragged starts, as one string so the selector result is stable. */
const fromKey = (c: { inProgress: boolean; fromNode?: { id: string } | null; fromHandle?: { id?: string | null; type: string } | null }): string =>
  c.inProgress && c.fromNode && c.fromHandle ? `${c.fromNode.id}\n${c.fromHandle.id ?? ""}\n${c.fromHandle.type}` : "";

export type HandleStatus = "origin" | "can" | "cannot" | undefined;

/**
 * For a node's ports: whether each would accept the connection being dragged (`can`/`cannot`),
 * or is where it starts (`origin`). Re-renders only when a drag starts or ends.
 */
export function useHandleStatus(nodeId: string): (port: string, direction: "in" | "out") => HandleStatus {
  const check = useContext(ConnectCheckContext);
  const from = useConnection(fromKey);
  return (port, direction) => {
    if (!check || from === "") return undefined;
    const [fromNode = "", fromHandle = "", fromType = ""] = from.split("\n");
    if (fromNode === nodeId && fromHandle === port) return "origin";
    if (fromNode === nodeId) return undefined;
    // Dragging from an output: inputs answer; from an input: outputs answer.
    if (fromType === "source" && direction === "in") return check(edgeEnd(fromNode, fromHandle, "from"), edgeEnd(nodeId, port, "to")).ok ? "can" : "cannot";
    if (fromType === "target" && direction === "out") return check(edgeEnd(nodeId, port, "from"), edgeEnd(fromNode, fromHandle, "to")).ok ? "can" : "cannot";
    return undefined;
  };
}
