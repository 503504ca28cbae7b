// The runner's job API, as the web app uses it: submit a validated pipeline for a deployment, and
// dry-run a draft on a sample (POST /dry-run).
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

// ---- Dry runs ------------------------------------------------------------------------------------

const DRY_RUN_TIMEOUT_MS = 120_000;

const jsonObject = z.record(z.string(), z.unknown());
const dryRunRecordSchema = z.object({ value: z.unknown(), timestamp: z.number().nullable(), key: z.string().optional() });
const dryRunPortSchema = z.object({ count: z.number(), records: z.array(dryRunRecordSchema) });

/** The runner's answer to POST /dry-run (apps/runner/src/job/dry-run.ts), checked on arrival. */
export const dryRunResultSchema = z.object({
  pipeline: z.string(),
  durationMs: z.number(),
  inputs: z.record(z.string(), z.object({ records: z.number(), label: z.string() })),
  nodes: z.record(
    z.string(),
    z.object({
      type: z.string(),
      recordsIn: z.number(),
      recordsOut: z.number(),
      late: z.number(),
      deadLetters: z.number(),
      keys: z.number(),
      ports: z.record(z.string(), dryRunPortSchema),
    }),
  ),
  alerts: z.object({
    count: z.number(),
    items: z.array(
      z.object({
        sinkNodeId: z.string(),
        timestamp: z.number(),
        key: z.string().optional(),
        value: jsonObject,
        evidence: z.array(
          z.object({ sourceNodeId: z.string(), line: z.number(), ts: z.number(), id: z.union([z.string(), z.number()]).optional(), value: jsonObject }),
        ),
        evidenceTotal: z.number(),
      }),
    ),
  }),
  deadLetters: z.object({
    count: z.number(),
    items: z.array(
      z.object({ nodeId: z.string(), port: z.string().optional(), reason: z.string(), raw: z.string().optional(), value: z.unknown().optional(), line: z.number().optional() }),
    ),
  }),
  warnings: z.array(z.string()),
});
export type DryRunResult = z.infer<typeof dryRunResultSchema>;
export type DryRunRecord = z.infer<typeof dryRunRecordSchema>;

export type DryRunSample = readonly string[] | { topic?: string; lastN: number };

/** The runner refused the request (HTTP 4xx): a problem with the pipeline or the sample, not with the runner. */
export class RunnerRefusedError extends RunnerError {
  override name = "RunnerRefusedError";
  constructor(
    readonly status: number,
    message: string,
    readonly issues: readonly string[],
  ) {
    super(message);
  }
}

export async function dryRunPipeline(runnerUrl: string, body: { pipeline: PipelineDocument; records: DryRunSample; sourceNodeId?: string }): Promise<DryRunResult> {
  let response: Response;
  try {
    response = await fetch(`${runnerUrl}/dry-run`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(DRY_RUN_TIMEOUT_MS),
    });
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new RunnerError(`the runner at ${runnerUrl} did not answer (${reason}); is it running? (npm start starts it; RUNNER_URL points elsewhere)`);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RunnerError(`the runner answered POST /dry-run with something other than JSON (HTTP ${response.status}): ${text.slice(0, 200)}`);
  }
  if (!response.ok) {
    const err = z.object({ error: z.string(), issues: z.array(z.string()).optional() }).safeParse(json);
    const message = err.success ? err.data.error : `HTTP ${response.status} ${text.slice(0, 500)}`;
    const issues = err.success ? (err.data.issues ?? []) : [];
    if (response.status >= 400 && response.status < 500) throw new RunnerRefusedError(response.status, message, issues);
    throw new RunnerError(`the dry run failed on the runner: ${message}`);
  }
  const result = dryRunResultSchema.safeParse(json);
  if (!result.success) throw new RunnerError(`unexpected dry-run answer from the runner: ${z.prettifyError(result.error)}`);
  return result.data;
}
