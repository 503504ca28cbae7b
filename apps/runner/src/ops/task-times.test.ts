import { describe, expect, it } from "vitest";
import type { SubtaskMetrics } from "../exec/parallel";
import { nodeTaskTimes } from "./task-times";

const times = (busy: number, bp: number, idle: number) => ({ busyTimeMsPerSecond: busy, backPressuredTimeMsPerSecond: bp, idleTimeMsPerSecond: idle });

function task(t: SubtaskMetrics["task"], subtask: number, nodes: string[], busy: number, bp: number, idle: number, queued = 0): SubtaskMetrics {
  return { task: t, subtask, nodes, metrics: {}, ...times(busy, bp, idle), queuedRecords: queued, maxQueuedRecords: queued, queueBoundRecords: 8192, totals: { busy: 0, backPressured: 0, idle: 0 } };
}

describe("nodeTaskTimes", () => {
  it("single-threaded: every node has the engine loop's times, sinks their own and no backpressure", () => {
    const out = nodeTaskTimes(["payments", "vel", "alerts"], { engine: times(40, 900, 60), subtasks: [], sinks: { alerts: times(990, 0, 10) } });
    expect(out).toEqual({ payments: times(40, 900, 60), vel: times(40, 900, 60), alerts: times(990, 0, 10) });
  });

  it("parallel: a keyed node shows its worst subtask, queued records summed", () => {
    const out = nodeTaskTimes(["payments", "vel", "alerts"], {
      engine: undefined,
      subtasks: [task("source", 0, ["payments"], 100, 700, 200, 5), task("keyed", 0, ["vel"], 300, 100, 600, 2), task("keyed", 1, ["vel"], 900, 50, 50, 3), task("sink", 0, ["alerts"], 10, 0, 990)],
      sinks: {},
    });
    expect(out["payments"]).toEqual({ ...times(100, 700, 200), queuedRecords: 5 });
    expect(out["vel"]).toEqual({ ...times(900, 100, 50), queuedRecords: 5 });
    expect(out["alerts"]).toEqual({ ...times(10, 0, 990), queuedRecords: 0 });
  });

  it("no figures for a node nobody reports (nothing is guessed)", () => {
    expect(nodeTaskTimes(["a"], { engine: undefined, subtasks: [], sinks: {} })).toEqual({});
  });
});
