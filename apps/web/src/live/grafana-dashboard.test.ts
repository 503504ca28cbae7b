// docs/grafana/keyflow-runner.json queries only metrics the runner really exports: every
// `keyflow_*` name in its PromQL is registered in the runner's metrics sources.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const read = (p: string) => fs.readFileSync(path.join(REPO, p), "utf8");

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}

describe("the Grafana dashboard of the runner", () => {
  const dashboard = JSON.parse(read("docs/grafana/keyflow-runner.json")) as { uid: string; panels: Panel[]; templating: { list: { name: string; query: unknown }[] } };
  const runnerSources = ["apps/runner/src/service/metrics.ts", "apps/runner/src/exec/prometheus.ts"].filter((p) => fs.existsSync(path.join(REPO, p))).map(read).join("\n");
  const exported = new Set([...runnerSources.matchAll(/"(keyflow_[a-z_]+)"/g)].map((m) => m[1]));

  it("uses only metric names the runner registers", () => {
    const exprs = [...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...dashboard.templating.list.map((v) => JSON.stringify(v.query))];
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\b(keyflow_[a-z_]+)\b/g)].map((m) => m[1])));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
  });

  it("covers throughput, dead letters, late records, state, keys, checkpoints against the timeout and consumer lag", () => {
    const all = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join("\n");
    for (const name of [
      "keyflow_records_in_total",
      "keyflow_records_out_total",
      "keyflow_dead_letters_total",
      "keyflow_late_records_total",
      "keyflow_state_bytes",
      "keyflow_keys",
      "keyflow_last_checkpoint_duration_milliseconds",
      "keyflow_checkpoint_timeout_milliseconds",
      "keyflow_checkpoints_failed_total",
      "keyflow_source_lag_records",
      "keyflow_task_backpressured_time_ms_per_second",
      "keyflow_node_backpressured_time_ms_per_second",
      "keyflow_node_busy_time_ms_per_second",
    ]) {
      expect(all, name).toContain(name);
    }
    // The duration is drawn against the timeout the runner exports, and 80 % of it.
    expect(all).toContain('keyflow_checkpoint_timeout_milliseconds{job=~"$job"} * 0.8');
    const ids = dashboard.panels.map((p) => p.title);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
