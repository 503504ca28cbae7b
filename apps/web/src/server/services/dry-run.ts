// Dry runs: the draft is checked by the shared validator (a pipeline with errors cannot run), then
// the runner runs it in bounded mode on the sample and answers with what each node and port saw.
import { TRPCError } from "@trpc/server";
import { validatePipeline, type PipelineDocument } from "@keyflow/operators";
import { pipelineRejected } from "../errors";
import { dryRunPipeline, RunnerError, RunnerRefusedError, type DryRunResult, type DryRunSample } from "../runner-client";

export type DryRunSampleInput = { kind: "lines"; lines: string[] } | { kind: "topic"; topic?: string | undefined; lastN: number };

export async function dryRunDraft(runnerUrl: string, input: { graph: PipelineDocument; sample: DryRunSampleInput; sourceNodeId?: string | undefined }): Promise<DryRunResult> {
  const result = validatePipeline(input.graph);
  if (!result.ok) throw pipelineRejected("cannot dry-run the draft", result.issues);
  const records: DryRunSample = input.sample.kind === "lines" ? input.sample.lines : { ...(input.sample.topic ? { topic: input.sample.topic } : {}), lastN: input.sample.lastN };
  try {
    return await dryRunPipeline(runnerUrl, { pipeline: input.graph, records, ...(input.sourceNodeId ? { sourceNodeId: input.sourceNodeId } : {}) });
  } catch (error) {
    if (error instanceof RunnerRefusedError) {
      const detail = error.issues.length > 0 ? `: ${error.issues.join("; ")}` : "";
      throw new TRPCError({ code: error.status === 422 ? "UNPROCESSABLE_CONTENT" : "BAD_REQUEST", message: `${error.message}${detail}`, cause: error });
    }
    if (error instanceof RunnerError) throw new TRPCError({ code: "BAD_GATEWAY", message: error.message, cause: error });
    throw error;
  }
}
