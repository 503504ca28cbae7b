// The runner's job API, as the web app uses it: submit a validated pipeline for a deployment, and
// dry-run a draft on a sample (POST /dry-run).
import { z } from "zod";
import type { PipelineDocument } from "@keyflow/operators";
import { serverEnv } from "./env";

/** Every call carries the runner's bearer token when one is configured (KEYFLOW_RUNNER_TOKEN). */
export function withRunnerAuth(init: RequestInit): RequestInit {
  const token = serverEnv().runnerToken;
  if (token === undefined) return init;
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return { ...init, headers };
}

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

const refusalSchema = z.object({ error: z.string(), issues: z.array(z.string()).optional() });

/** The runner's error body (`{ error, issues? }`), when the answer is one. */
function runnerRefusal(text: string): { error: string; issues: string[] } | null {
  try {
    const parsed = refusalSchema.safeParse(JSON.parse(text));
    return parsed.success ? { error: parsed.data.error, issues: parsed.data.issues ?? [] } : null;
  } catch {
    return null;
  }
}

/** Where a job starts (a restore, or the second half of a rescale): see POST /jobs in apps/runner/README.md. */
export interface JobStart {
  /** A checkpoint or savepoint folder on the runner. */
  restoreFrom?: string;
  /** Overrides the pipeline's settings.parallelism. */
  parallelism?: number;
  allowNonRestoredState?: boolean;
}

export async function submitJob(runnerUrl: string, body: { deploymentId: string; pipeline: PipelineDocument } & JobStart): Promise<SubmittedJob> {
  let response: Response;
  try {
    response = await fetch(
      `${runnerUrl}/jobs`,
      withRunnerAuth({
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(SUBMIT_TIMEOUT_MS),
      }),
    );
  } catch (error) {
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new RunnerError(`the runner at ${runnerUrl} did not answer (${reason}); is it running? (npm start starts it; RUNNER_URL points elsewhere)`);
  }
  const text = await response.text();
  if (!response.ok) {
    // A 4xx names what is wrong (the nodes whose state does not fit a restore, say): kept as issues.
    const refusal = runnerRefusal(text);
    if (refusal && response.status >= 400 && response.status < 500) {
      throw new RunnerRefusedError(response.status, `the runner refused the job: ${[refusal.error, ...refusal.issues].join("; ")}`, refusal.issues);
    }
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
    response = await fetch(
      `${runnerUrl}/dry-run`,
      withRunnerAuth({
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(DRY_RUN_TIMEOUT_MS),
      }),
    );
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

// ---- Running jobs: live metrics, checkpoints, stop -----------------------------------------------

const JOB_TIMEOUT_MS = 15_000;
/** A graceful stop takes a final checkpoint first. */
const STOP_TIMEOUT_MS = 60_000;

async function runnerFetch(runnerUrl: string, pathname: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Response> {
  const { timeoutMs, signal, ...rest } = init;
  const signals = [AbortSignal.timeout(timeoutMs ?? JOB_TIMEOUT_MS), ...(signal ? [signal] : [])];
  try {
    return await fetch(`${runnerUrl}${pathname}`, withRunnerAuth({ ...rest, signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) }));
  } catch (error) {
    if (signal?.aborted) throw error;
    const reason = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    throw new RunnerError(`the runner at ${runnerUrl} did not answer (${reason}); is it running? (npm start starts it; RUNNER_URL points elsewhere)`);
  }
}

/** The runner does not know the job (it restarted, or the id is wrong). */
export class RunnerJobNotFoundError extends RunnerError {
  override name = "RunnerJobNotFoundError";
}

async function jsonOf(response: Response, what: string): Promise<unknown> {
  const text = await response.text();
  if (response.status === 404) throw new RunnerJobNotFoundError(`the runner has no such job (${what}): ${text.slice(0, 200)}`);
  if (!response.ok) throw new RunnerError(`${what} failed on the runner: HTTP ${response.status} ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new RunnerError(`the runner answered ${what} with something other than JSON: ${text.slice(0, 200)}`);
  }
}

/** GET /jobs/:id/checkpoints: the current run's completed checkpoints, newest first. */
export const runnerCheckpointsSchema = z.object({
  jobId: z.string(),
  checkpointDir: z.string().optional(),
  checkpoints: z.array(
    z.looseObject({
      id: z.number(),
      /** Absent on the runner's completed checkpoints: they are all completed. */
      status: z.string().optional(),
      triggeredAt: z.number(),
      completedAt: z.number().optional(),
      durationMs: z.number(),
      stateBytes: z.number(),
      alignmentMs: z.number().optional(),
      incrementalBytes: z.number().optional(),
      failure: z.string().optional(),
      /** The checkpoint's folder on the runner (absent when the job keeps no checkpoints): a restore starts from it. */
      path: z.string().optional(),
    }),
  ),
});
export type RunnerCheckpoints = z.infer<typeof runnerCheckpointsSchema>;

export async function getJobCheckpoints(runnerUrl: string, jobId: string): Promise<RunnerCheckpoints> {
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}/checkpoints`);
  const parsed = runnerCheckpointsSchema.safeParse(await jsonOf(response, `GET /jobs/${jobId}/checkpoints`));
  if (!parsed.success) throw new RunnerError(`unexpected checkpoints answer from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The part of GET /jobs/:id (and DELETE's answer) the web app reads. */
export const runnerJobSchema = z.looseObject({
  id: z.string(),
  status: z.string(),
  failure: z.string().nullable().optional(),
  restarts: z.number().optional(),
  lastCheckpoint: z.looseObject({ id: z.number(), durationMs: z.number(), stateBytes: z.number() }).nullable().optional(),
});
export type RunnerJob = z.infer<typeof runnerJobSchema>;

export async function getJob(runnerUrl: string, jobId: string): Promise<RunnerJob> {
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}`);
  const parsed = runnerJobSchema.safeParse(await jsonOf(response, `GET /jobs/${jobId}`));
  if (!parsed.success) throw new RunnerError(`unexpected job answer from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** GET /jobs: every job the runner has (the reconciler compares them with the deployments that should run). */
export async function listJobs(runnerUrl: string): Promise<RunnerJob[]> {
  const response = await runnerFetch(runnerUrl, "/jobs", { timeoutMs: 5_000 });
  const parsed = z.object({ jobs: z.array(runnerJobSchema) }).safeParse(await jsonOf(response, "GET /jobs"));
  if (!parsed.success) throw new RunnerError(`unexpected job list from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data.jobs;
}

/** DELETE /jobs/:id: a graceful stop (final checkpoint); resolves with the stopped job. */
export async function stopJob(runnerUrl: string, jobId: string): Promise<RunnerJob> {
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}`, { method: "DELETE", timeoutMs: STOP_TIMEOUT_MS });
  const parsed = runnerJobSchema.safeParse(await jsonOf(response, `DELETE /jobs/${jobId}`));
  if (!parsed.success) throw new RunnerError(`unexpected stop answer from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** One server-sent event. */
export interface SseEvent {
  event: string;
  data: string;
}

/** Splits a text/event-stream body into events (the parts of the spec the runner uses: event, data). */
export async function* parseSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal?.addEventListener("abort", onAbort, { once: true });
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = val;
          else if (field === "data") data.push(val);
        }
        if (data.length > 0) yield { event, data: data.join("\n") };
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    // Left early (the subscriber went away): close the connection to the runner too.
    await reader.cancel().catch(() => undefined);
  }
}

/** GET /jobs/:id/metrics/stream: the runner's raw snapshots (JSON), one a second, until `signal` aborts or the job's stream ends. */
export async function* streamJobMetrics(runnerUrl: string, jobId: string, signal?: AbortSignal): AsyncGenerator<unknown> {
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}/metrics/stream`, {
    headers: { accept: "text/event-stream" },
    // The stream lives as long as the subscription; only the connection itself is timed.
    timeoutMs: 24 * 3600_000,
    ...(signal ? { signal } : {}),
  });
  if (!response.ok || !response.body) await jsonOf(response, `GET /jobs/${jobId}/metrics/stream`);
  if (!response.body) return;
  for await (const ev of parseSse(response.body, signal)) {
    if (ev.event !== "metrics") continue;
    try {
      yield JSON.parse(ev.data) as unknown;
    } catch {
      // a malformed event is skipped; the next one comes within a second
    }
  }
}

// ---- Job controls: savepoints, stop with a savepoint ----------------------------------------------

/** A savepoint waits for a checkpoint to commit; a stop with one also drains the job. */
const SAVEPOINT_TIMEOUT_MS = 120_000;

/** A 4xx/409 answer of a job control, with the runner's reason (and issues) in the message. */
async function controlJson(response: Response, what: string): Promise<unknown> {
  if (response.ok || response.status === 404) return jsonOf(response, what);
  const text = await response.text();
  const refusal = runnerRefusal(text);
  if (refusal && response.status >= 400 && response.status < 500) throw new RunnerRefusedError(response.status, `${what}: ${[refusal.error, ...refusal.issues].join("; ")}`, refusal.issues);
  throw new RunnerError(`${what} failed on the runner: HTTP ${response.status} ${text.slice(0, 300)}`);
}

const savepointAnswerSchema = z.object({ jobId: z.string(), path: z.string().min(1) });

/** POST /jobs/:id/savepoint: a checkpoint now, kept as a savepoint folder; resolves with its path. */
export async function savepointJob(runnerUrl: string, jobId: string): Promise<string> {
  const what = `POST /jobs/${jobId}/savepoint`;
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}/savepoint`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", timeoutMs: SAVEPOINT_TIMEOUT_MS });
  const parsed = savepointAnswerSchema.safeParse(await controlJson(response, what));
  if (!parsed.success) throw new RunnerError(`unexpected savepoint answer from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data.path;
}

const stoppedWithSavepointSchema = runnerJobSchema.extend({ savepointPath: z.string().min(1) });

/** POST /jobs/:id/stop?savepoint=true: a graceful stop whose final checkpoint is kept as a savepoint. */
export async function stopJobWithSavepoint(runnerUrl: string, jobId: string): Promise<RunnerJob & { savepointPath: string }> {
  const what = `POST /jobs/${jobId}/stop?savepoint=true`;
  const response = await runnerFetch(runnerUrl, `/jobs/${encodeURIComponent(jobId)}/stop?savepoint=true`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", timeoutMs: SAVEPOINT_TIMEOUT_MS });
  const parsed = stoppedWithSavepointSchema.safeParse(await controlJson(response, what));
  if (!parsed.success) throw new RunnerError(`unexpected stop answer from the runner: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
