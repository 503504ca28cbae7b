// What a deploy would ship: the difference between the version running now (the newest
// deployment that is pending or running) and the document about to be deployed. The canvas marks
// the nodes it changes, and the deploy button says how many changes it holds: `Deploy (3 changes)`.
import type { PipelineDocumentInput } from "@keyflow/operators";
import { changedNodeIds, countChanges, describeChangeCount, diffPipelines, type PipelineDiff } from "./diff";

export interface DeploymentLike {
  versionId: string;
  status: string;
  createdAt: Date | string;
}

export interface VersionLike {
  id: string;
  number: number;
  graph: PipelineDocumentInput;
}

/** The version deployed now: the newest deployment that is running (or being started), if any. */
export function deployedVersion<V extends VersionLike>(versions: readonly V[], deployments: readonly DeploymentLike[]): V | undefined {
  const live = [...deployments]
    .filter((d) => d.status === "running" || d.status === "pending")
    .sort((a, b) => new Date(b.createdAt).getTime() - new Date(a.createdAt).getTime())[0];
  return live ? versions.find((v) => v.id === live.versionId) : undefined;
}

export interface DeployPlan {
  /** The version running now; undefined when nothing is deployed. */
  deployed: { id: string; number: number } | undefined;
  diff: PipelineDiff | undefined;
  /** Number of changes the deploy ships (0 when identical; every node and edge on a first deploy). */
  changes: number;
  /** Nodes of the target that are new or changed since the deployed version. */
  changedNodeIds: string[];
  /** Nodes the deploy removes (not on the target's canvas). */
  removedNodeIds: string[];
  /** The deploy button's label: `Deploy (3 changes)`, `Deploy (no changes)`, `Deploy (first deployment)`. */
  label: string;
}

/** The plan for deploying `target` while `deployed` (a version) runs. */
export function deployPlan(target: PipelineDocumentInput, deployed: VersionLike | undefined): DeployPlan {
  if (!deployed) {
    const changes = target.nodes.length + (target.edges?.length ?? 0);
    return { deployed: undefined, diff: undefined, changes, changedNodeIds: [], removedNodeIds: [], label: "Deploy (first deployment)" };
  }
  const diff = diffPipelines(deployed.graph, target);
  const changes = countChanges(diff);
  return {
    deployed: { id: deployed.id, number: deployed.number },
    diff,
    changes,
    changedNodeIds: changedNodeIds(diff),
    removedNodeIds: diff.removedNodes.map((n) => n.id),
    label: `Deploy (${describeChangeCount(changes)})`,
  };
}
