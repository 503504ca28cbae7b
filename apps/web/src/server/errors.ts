// Errors that carry what the UI needs to show them: a rejected pipeline carries the shared
// validator's issues (each names its node and param), and the tRPC error formatter (./trpc.ts)
// puts them on `error.data.pipelineIssues`.
import { TRPCError } from "@trpc/server";
import type { Issue } from "@keyflow/operators";

export type PipelineIssue = Issue;

export class PipelineRejectedError extends Error {
  constructor(
    message: string,
    readonly issues: readonly PipelineIssue[],
  ) {
    super(message);
    this.name = "PipelineRejectedError";
  }
}

/** 422 with the validator's issues: the graph is well-formed JSON but not a runnable pipeline. */
export function pipelineRejected(action: string, issues: readonly PipelineIssue[]): TRPCError {
  const errors = issues.filter((issue) => issue.severity === "error").length;
  const message = `${action}: the pipeline has ${errors} error${errors === 1 ? "" : "s"}; fix them first`;
  return new TRPCError({ code: "UNPROCESSABLE_CONTENT", message, cause: new PipelineRejectedError(message, issues) });
}

export function notFound(what: string, id: string): TRPCError {
  return new TRPCError({ code: "NOT_FOUND", message: `${what} ${JSON.stringify(id)} does not exist` });
}
