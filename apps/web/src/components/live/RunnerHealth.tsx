"use client";
// The runner's health as the web server sees it, polled every 2 s by the panels that show a job's
// status (see live/runner-status.ts for what they say).
import { useQuery } from "@tanstack/react-query";
import type { RunnerHealthView } from "../../live/runner-status";
import { useTRPC } from "../../trpc/react";

export function useRunnerHealth(enabled = true): RunnerHealthView | undefined {
  const trpc = useTRPC();
  const health = useQuery({ ...trpc.deployment.runnerHealth.queryOptions(undefined, { enabled }), refetchInterval: 2_000, retry: false, staleTime: 0 });
  return health.data;
}
