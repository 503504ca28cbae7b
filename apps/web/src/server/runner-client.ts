// The runner's job API, as the web app uses it: submit a validated pipeline for a deployment.
import { z } from "zod";
import type { PipelineDocument } from "@keyflow/operators";

const SUBMIT_TIMEOUT_MS = 15_000;

/** The runner answers POST /jobs with the job it created; only the id is required. */
const submittedJobSchema = z
  .object({
    id: z.string().optional(),
    jobId: z.string().optional(),
    status: z.string().optional(),
  })
  .refine((job) => job.id !== undefined || job.jobId !== undefined, "the runner's answer has no job id");

export interface SubmittedJob {
  jobId: string;
  /** The runner's own status word, when it sent one. */
  status?: string;
}

export class RunnerError extends Error {
  override name = "RunnerError";
}

export async function submitJob(runnerUrl: string, body: { deploymentId: string; pipeline: PipelineDocument }): Promise<SubmittedJob> {
  let response: Response;
  try {
    response = await fetch(`${runnerUrl}/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(SUBMIT_TIMEOUT_MS),
    });
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new RunnerError(`the runner at ${runnerUrl} did not answer (${reason}); is it running? (npm start starts it; RUNNER_URL points elsewhere)`);
  }
  const text = await response.text();
  if (!response.ok) {
    throw new RunnerError(`the runner refused the job: HTTP ${response.status} ${text.slice(0, 500)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RunnerError(`the runner answered POST /jobs with something other than JSON: ${text.slice(0, 200)}`);
  }
  const job = submittedJobSchema.safeParse(json);
  if (!job.success) throw new RunnerError(`unexpected answer from the runner: ${z.prettifyError(job.error)}`);
  const jobId = job.data.id ?? job.data.jobId ?? "";
  return job.data.status === undefined ? { jobId } : { jobId, status: job.data.status };
}
