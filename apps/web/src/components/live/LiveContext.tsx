"use client";
// The running deployment's live figures for the canvas: one tRPC subscription (server-sent events,
// deployment.liveMetrics) per shown pipeline with a running deployment; nodes and edges read what
// they draw from here. Inert (no figures) outside the provider.
import { useSubscription } from "@trpc/tanstack-react-query";
import { createContext, useContext, useMemo, useState, type ReactNode } from "react";
import type { PipelineDocument } from "@keyflow/operators";
import { classifyBottleneck, type NodeVerdict } from "../../live/bottleneck";
import { edgeFlows, type EdgeFlow } from "../../live/edges";
import { appendHistory, type RateHistory } from "../../live/history";
import type { LiveMetrics } from "../../live/metrics";
import { unreachableText } from "../../live/runner-status";
import { useTRPC } from "../../trpc/react";
import { useRunnerHealth } from "./RunnerHealth";

export interface LiveValue {
  deploymentId: string;
  metrics: LiveMetrics | undefined;
  history: RateHistory;
  verdicts: Record<string, NodeVerdict>;
  flows: ReadonlyMap<string, EdgeFlow>;
  /** The subscription's state: connecting, pending (streaming), error. */
  status: "idle" | "connecting" | "pending" | "error";
  error: string | null;
  /** "runner unreachable since HH:MM:SS" while the runner does not answer: the figures are stale. */
  unreachable?: string | null;
}

const LiveCtx = createContext<LiveValue | null>(null);

export function useLive(): LiveValue | null {
  return useContext(LiveCtx);
}

const NO_FLOWS: ReadonlyMap<string, EdgeFlow> = new Map();

/** Given live figures without a subscription (component tests). */
export function StaticLiveProvider({ value, children }: { value: LiveValue; children: ReactNode }) {
  return <LiveCtx.Provider value={value}>{children}</LiveCtx.Provider>;
}

export function LiveProvider({ deploymentId, document, children }: { deploymentId: string; document: PipelineDocument; children: ReactNode }) {
  const trpc = useTRPC();
  const [state, setState] = useState<{ metrics: LiveMetrics | undefined; history: RateHistory }>({ metrics: undefined, history: new Map() });
  const sub = useSubscription(
    trpc.deployment.liveMetrics.subscriptionOptions(
      { deploymentId },
      {
        onData: (m: LiveMetrics) => setState((s) => ({ metrics: m, history: appendHistory(s.history, m) })),
      },
    ),
  );
  const metrics = state.metrics;
  const unreachable = unreachableText(useRunnerHealth());
  const edges = document.edges;
  const nodes = document.nodes;
  const verdicts = useMemo(() => (metrics ? classifyBottleneck(nodes, edges ?? [], metrics.nodes) : {}), [metrics, nodes, edges]);
  const flows = useMemo(() => (metrics ? edgeFlows(edges ?? [], metrics.nodes) : NO_FLOWS), [metrics, edges]);
  const value = useMemo<LiveValue>(
    () => ({ deploymentId, metrics, history: state.history, verdicts, flows, status: sub.status, error: sub.error?.message ?? null, unreachable }),
    [deploymentId, metrics, state.history, verdicts, flows, sub.status, sub.error, unreachable],
  );
  return <LiveCtx.Provider value={value}>{children}</LiveCtx.Provider>;
}
