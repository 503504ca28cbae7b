// Prometheus figures of parallel jobs, per task and subtask (Flink's task metrics):
//   keyflow_task_busy_time_ms_per_second{job,task,subtask}            (busyTimeMsPerSecond)
//   keyflow_task_backpressured_time_ms_per_second{job,task,subtask}   (backPressuredTimeMsPerSecond)
//   keyflow_task_idle_time_ms_per_second{job,task,subtask}            (idleTimeMsPerSecond)
//   keyflow_task_queued_records{job,task,subtask}  records on the task's output channels not yet consumed
//   keyflow_subtask_records_in_total / _out_total{job,node,subtask}   per node and subtask
// `task` is source, keyed or sink. Single-threaded jobs report none of these.
import { Counter, Gauge, type Registry } from "prom-client";
import type { SubtaskMetrics } from "./parallel";

export interface HasSubtaskMetrics {
  deploymentId: string;
  subtaskMetrics(): SubtaskMetrics[];
}

export function registerSubtaskMetrics(registry: Registry, jobs: () => Iterable<HasSubtaskMetrics>): void {
  let cache: { at: number; rows: Array<{ job: string; t: SubtaskMetrics }> } | undefined;
  const rows = () => {
    const now = performance.now();
    if (!cache || now - cache.at > 250) {
      const out: Array<{ job: string; t: SubtaskMetrics }> = [];
      for (const j of jobs()) for (const t of j.subtaskMetrics()) out.push({ job: j.deploymentId, t });
      cache = { at: now, rows: out };
    }
    return cache.rows;
  };
  const taskGauge = (name: string, help: string, figure: (t: SubtaskMetrics) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ["job", "task", "subtask"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const { job, t } of rows()) this.set({ job, task: t.task, subtask: String(t.subtask) }, figure(t));
      },
    });
  taskGauge("keyflow_task_busy_time_ms_per_second", "Milliseconds per second the subtask was processing", (t) => t.busyTimeMsPerSecond);
  taskGauge("keyflow_task_backpressured_time_ms_per_second", "Milliseconds per second the subtask waited for credit from downstream", (t) => t.backPressuredTimeMsPerSecond);
  taskGauge("keyflow_task_idle_time_ms_per_second", "Milliseconds per second the subtask waited for input", (t) => t.idleTimeMsPerSecond);
  taskGauge("keyflow_task_queued_records", "Records on the subtask's output channels not yet consumed downstream", (t) => t.queuedRecords);
  const nodeCounter = (name: string, help: string, figure: "recordsIn" | "recordsOut") =>
    new Counter({
      name,
      help,
      labelNames: ["job", "node", "subtask"] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const { job, t } of rows()) {
          if (t.task !== "keyed") continue;
          for (const [node, m] of Object.entries(t.metrics)) this.inc({ job, node, subtask: String(t.subtask) }, m[figure]);
        }
      },
    });
  nodeCounter("keyflow_subtask_records_in_total", "Records that entered the node in this keyed subtask", "recordsIn");
  nodeCounter("keyflow_subtask_records_out_total", "Records the node emitted in this keyed subtask", "recordsOut");
}
