// Prometheus metrics of the runner (prom-client): per job and node, read from the jobs at scrape
// time (counters are the engine's running totals, so a restart from a checkpoint may reset them,
// which Prometheus treats as a counter reset), plus the default process metrics.
import { collectDefaultMetrics, Counter, Gauge, Registry } from "prom-client";
import type { JobNodeMetrics } from "../job/driver";
import type { JobManager, ManagedStatus } from "./jobs";
import { registerSubtaskMetrics } from "../exec/prometheus";
import { nodeTaskTimes } from "../ops/task-times";

const STATUSES: readonly ManagedStatus[] = ["starting", "running", "restarting", "stopping", "finished", "stopped", "failed"];

type NodeFigure = keyof JobNodeMetrics;

export function createMetricsRegistry(jobs: JobManager): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  // One read of every job's figures per scrape, shared by the collectors below.
  let cache: { at: number; rows: { job: string; node: string; m: JobNodeMetrics }[] } | undefined;
  const rows = () => {
    const now = performance.now();
    if (!cache || now - cache.at > 250) {
      const out: { job: string; node: string; m: JobNodeMetrics }[] = [];
      for (const j of jobs.list()) for (const [node, m] of Object.entries(j.metrics())) out.push({ job: j.deploymentId, node, m });
      cache = { at: now, rows: out };
    }
    return cache.rows;
  };

  const counter = (name: string, help: string, figure: NodeFigure) =>
    new Counter({
      name,
      help,
      labelNames: ["job", "node"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const r of rows()) this.inc({ job: r.job, node: r.node }, r.m[figure]);
      },
    });
  const gauge = (name: string, help: string, figure: NodeFigure) =>
    new Gauge({
      name,
      help,
      labelNames: ["job", "node"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const r of rows()) this.set({ job: r.job, node: r.node }, r.m[figure]);
      },
    });

  counter("keyflow_records_in_total", "Records that entered the node", "recordsIn");
  counter("keyflow_records_out_total", "Records the node emitted on its outputs", "recordsOut");
  counter("keyflow_dead_letters_total", "Records the node sent to the dead-letter output", "deadLetters");
  counter("keyflow_late_records_total", "Records that arrived at or behind the node's watermark", "late");
  gauge("keyflow_watermark_milliseconds", "The node's current event-time watermark (epoch ms; -Inf before any record, +Inf at end of input)", "watermark");
  gauge("keyflow_keys", "Keys with state in the node", "keys");
  gauge("keyflow_state_bytes", "Approximate bytes of keyed state in the node", "stateBytes");
  gauge("keyflow_timers", "Registered event- and processing-time timers in the node", "timers");

  new Gauge({
    name: "keyflow_job_status",
    help: "1 for the job's current status",
    labelNames: ["job", "pipeline", "status"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) {
        const v = j.view();
        for (const s of STATUSES) this.set({ job: j.deploymentId, pipeline: v.pipeline, status: s }, v.status === s ? 1 : 0);
      }
    },
  });
  new Counter({
    name: "keyflow_job_restarts_total",
    help: "Times the job was restarted after a failure",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) this.inc({ job: j.deploymentId }, j.restarts);
    },
  });
  new Counter({
    name: "keyflow_epochs_replayed_total",
    help: "Checkpoints whose Kafka transactions the broker had all aborted before they were committed: their epoch was replayed from the checkpoint before",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) this.inc({ job: j.deploymentId }, j.epochsReplayed);
    },
  });
  new Gauge({
    name: "keyflow_last_checkpoint_id",
    help: "Id of the job's newest completed checkpoint",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) {
        const cp = j.view().lastCheckpoint;
        if (cp) this.set({ job: j.deploymentId }, cp.id);
      }
    },
  });
  new Gauge({
    name: "keyflow_last_checkpoint_duration_milliseconds",
    help: "Duration of the job's newest completed checkpoint",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) {
        const cp = j.view().lastCheckpoint;
        if (cp) this.set({ job: j.deploymentId }, cp.durationMs);
      }
    },
  });
  new Gauge({
    name: "keyflow_last_checkpoint_size_bytes",
    help: "State bytes of the job's newest completed checkpoint",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) {
        const cp = j.view().lastCheckpoint;
        if (cp) this.set({ job: j.deploymentId }, cp.stateBytes);
      }
    },
  });
  new Gauge({
    name: "keyflow_source_lag_records",
    help: "Records behind the end of the source's input per partition (Kafka consumer lag), as of the last fetch",
    labelNames: ["job", "node", "input", "partition"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) {
        for (const [node, m] of Object.entries(j.sourceMetrics())) {
          for (const [partition, lag] of Object.entries(m.lag)) this.set({ job: j.deploymentId, node, input: m.input, partition }, lag);
        }
      }
    },
  });
  new Gauge({
    name: "keyflow_checkpoint_timeout_milliseconds",
    help: "The pipeline's checkpointTimeoutMs: a checkpoint not done by then is aborted (chart the duration against it)",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) this.set({ job: j.deploymentId }, j.doc.settings.checkpointTimeoutMs);
    },
  });
  new Counter({
    name: "keyflow_checkpoints_failed_total",
    help: "Checkpoints aborted in the job's current run (parallel jobs: not acknowledged within the timeout)",
    labelNames: ["job"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const j of jobs.list()) this.inc({ job: j.deploymentId }, j.parallelExecution?.failedCheckpoints.length ?? 0);
    },
  });
  // Per node, whichever task runs it (single-threaded jobs too): what the canvas colours.
  let timesCache: { at: number; rows: { job: string; node: string; busy: number; bp: number }[] } | undefined;
  const timeRows = () => {
    const now = performance.now();
    if (!timesCache || now - timesCache.at > 250) {
      const out: { job: string; node: string; busy: number; bp: number }[] = [];
      for (const j of jobs.list()) {
        const t = nodeTaskTimes(Object.keys(j.metrics()), { engine: j.engineTimes(), subtasks: j.subtaskMetrics(), sinks: j.ops.sinkTimes() });
        for (const [node, x] of Object.entries(t)) out.push({ job: j.deploymentId, node, busy: x.busyTimeMsPerSecond, bp: x.backPressuredTimeMsPerSecond });
      }
      timesCache = { at: now, rows: out };
    }
    return timesCache.rows;
  };
  new Gauge({
    name: "keyflow_node_busy_time_ms_per_second",
    help: "Milliseconds per second the task running the node was busy (the worst subtask; sinks: a write pending)",
    labelNames: ["job", "node"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of timeRows()) this.set({ job: r.job, node: r.node }, r.busy);
    },
  });
  new Gauge({
    name: "keyflow_node_backpressured_time_ms_per_second",
    help: "Milliseconds per second the task running the node waited for downstream (Flink: <= 100 OK, <= 500 LOW, above HIGH)",
    labelNames: ["job", "node"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const r of timeRows()) this.set({ job: r.job, node: r.node }, r.bp);
    },
  });
  registerSubtaskMetrics(registry, () => jobs.list());
  return registry;
}
