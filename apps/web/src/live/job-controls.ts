// Job controls in progress (savepoint, restore, rescale): each run's steps as the server takes them,
// and its result or error, kept per pipeline so the Operations tab shows them even after a restore
// replaced the deployment it was opened on. Framework-free; the server owns the one registry.

export type JobControlKind = "savepoint" | "restore" | "rescale";

export interface JobControlStep {
  at: number;
  message: string;
}

export interface JobControlRun {
  id: string;
  pipelineId: string;
  kind: JobControlKind;
  /** The deployment the control was asked on. */
  deploymentId: string;
  status: "running" | "succeeded" | "failed";
  steps: JobControlStep[];
  /** One line for the panel once done: "savepoint written: …", "restored at parallelism 2". */
  result: string | null;
  error: string | null;
  /** The runner's issues when it refused (each names a node). */
  issues: string[];
  /** The deployment now running, when the control replaced it. */
  newDeploymentId: string | null;
  savepointPath: string | null;
  /** The new deployment's parallelism (restore, rescale). */
  parallelism: number | null;
  startedAt: number;
  finishedAt: number | null;
}

/** Runs kept per pipeline (newest first): enough for the panel, bounded for a long-lived server. */
const KEPT_PER_PIPELINE = 10;

export class JobControlBusyError extends Error {
  override name = "JobControlBusyError";
}

export class JobControlRegistry {
  private readonly runs = new Map<string, JobControlRun[]>();
  /** The parallelism each deployment was started with by a control (the version's settings say otherwise). */
  private readonly parallelismOf = new Map<string, number>();
  private seq = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Starts a run; one control at a time per pipeline, since each may replace the running job. */
  start(pipelineId: string, kind: JobControlKind, deploymentId: string): JobControlRun {
    const list = this.runs.get(pipelineId) ?? [];
    const busy = list.find((r) => r.status === "running");
    if (busy) throw new JobControlBusyError(`a ${busy.kind} of this pipeline is still running (${busy.steps.at(-1)?.message ?? "starting"}); wait for it to finish`);
    const run: JobControlRun = {
      id: `${pipelineId}-${++this.seq}`,
      pipelineId,
      kind,
      deploymentId,
      status: "running",
      steps: [],
      result: null,
      error: null,
      issues: [],
      newDeploymentId: null,
      savepointPath: null,
      parallelism: null,
      startedAt: this.now(),
      finishedAt: null,
    };
    this.runs.set(pipelineId, [run, ...list].slice(0, KEPT_PER_PIPELINE));
    return run;
  }

  step(run: JobControlRun, message: string): void {
    run.steps.push({ at: this.now(), message });
  }

  succeed(run: JobControlRun, result: string): void {
    run.steps.push({ at: this.now(), message: result });
    run.status = "succeeded";
    run.result = result;
    run.finishedAt = this.now();
  }

  /** The error is shown once, under the steps (not as a step: it can be long, with the runner's issues). */
  fail(run: JobControlRun, error: string, issues: readonly string[] = []): void {
    run.status = "failed";
    run.error = error;
    run.issues = [...issues];
    run.finishedAt = this.now();
  }

  /** The pipeline's newest runs, newest first (copies: the caller may serialise them while a run goes on). */
  recent(pipelineId: string): JobControlRun[] {
    return (this.runs.get(pipelineId) ?? []).map((r) => ({ ...r, steps: [...r.steps], issues: [...r.issues] }));
  }

  setParallelism(deploymentId: string, parallelism: number): void {
    this.parallelismOf.set(deploymentId, parallelism);
  }

  parallelism(deploymentId: string): number | undefined {
    return this.parallelismOf.get(deploymentId);
  }
}

const GLOBAL_KEY = Symbol.for("keyflow.jobControls");

/** The server's registry: one per process (kept on globalThis so that bundles sharing the process share it). */
export function jobControls(): JobControlRegistry {
  const g = globalThis as { [GLOBAL_KEY]?: JobControlRegistry };
  g[GLOBAL_KEY] ??= new JobControlRegistry();
  return g[GLOBAL_KEY];
}
