"use client";
// What the signed-in person may do on a deployment's job, as the server's role matrix says
// (deployment.allowedActions): the job controls, the stop button and the sink throttle disable what
// it refuses and show its reason. The server checks again on every call.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../trpc/react";

export type JobActionName = "stop" | "throttle" | "savepoint" | "restore" | "rescale";

export function useJobActions(deploymentId: string) {
  const trpc = useTRPC();
  const query = useQuery({ ...trpc.deployment.allowedActions.queryOptions({ deploymentId }), staleTime: 5_000, refetchInterval: 10_000 });
  /** Null while the server has not answered: the UI shows no state it has not confirmed, so the control stays disabled. */
  const denied = (action: JobActionName): string | null => {
    const verdict = query.data?.actions[action];
    if (!verdict) return query.error ? `who may do this could not be checked: ${query.error.message}` : "checking what you may do…";
    return verdict.allowed ? null : `${action[0]?.toUpperCase() ?? ""}${action.slice(1)} ${verdict.reason ?? "is not allowed"}`;
  };
  return { data: query.data, denied };
}
