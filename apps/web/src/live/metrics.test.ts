import { describe, expect, it } from "vitest";
import { counterRate, runnerSnapshotSchema, toLiveMetrics } from "./metrics";
import { appendHistory, sparklinePoints } from "./history";
import { edgeFlows, strokeWidthFor } from "./edges";
import { formatBytes, formatDuration, formatRate, formatWatermarkLag } from "./format";

const snap = (time: string, nodes: Record<string, Record<string, unknown>>, extra: Record<string, unknown> = {}) =>
  runnerSnapshotSchema.parse({ jobId: "d1", pipeline: "p", status: "running", time, deadLetters: 0, lastCheckpointId: null, nodes, sources: {}, ...extra });

describe("counterRate", () => {
  it("is the counter's increase per second", () => {
    expect(counterRate(1200, 1000, 1)).toBe(200);
    expect(counterRate(1300, 1000, 2)).toBe(150);
    expect(counterRate(1001, 1000, 3)).toBe(0.3);
  });
  it("is 0 without a previous reading, without elapsed time, or after a counter reset", () => {
    expect(counterRate(50, undefined, 1)).toBe(0);
    expect(counterRate(50, 10, 0)).toBe(0);
    expect(counterRate(10, 500, 1)).toBe(0);
  });
});

describe("toLiveMetrics", () => {
  const a = snap("2026-06-01T09:00:00.000Z", { src: { type: "source.demo", recordsIn: 0, recordsOut: 1000, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: null } });
  const b = snap("2026-06-01T09:00:02.000Z", {
    src: { type: "source.demo", recordsIn: 0, recordsOut: 1400, late: 4, deadLetters: 2, keys: 0, timers: 0, stateBytes: 0, watermark: Date.parse("2026-06-01T08:59:55Z") },
    vel: { type: "velocity", recordsIn: 390, recordsOut: 3, late: 0, deadLetters: 0, keys: 120, timers: 5, stateBytes: 4096, watermark: null },
  });

  it("computes rates from the runner's timestamps, not the arrival times", () => {
    const m = toLiveMetrics("dep", b, a);
    expect(m.intervalSeconds).toBe(2);
    expect(m.nodes.src?.recordsOutPerSecond).toBe(200);
    expect(m.nodes.src?.latePerSecond).toBe(2);
    expect(m.nodes.src?.deadLettersPerSecond).toBe(1);
    expect(m.nodes.src?.watermark).toBe(Date.parse("2026-06-01T08:59:55Z"));
    // A node first seen in this snapshot has no rate yet.
    expect(m.nodes.vel?.recordsInPerSecond).toBe(0);
    expect(m.nodes.vel?.stateBytes).toBe(4096);
    expect(m.at).toBe(Date.parse("2026-06-01T09:00:02Z"));
  });

  it("gives zero rates on the first snapshot", () => {
    const m = toLiveMetrics("dep", a, undefined);
    expect(m.intervalSeconds).toBe(0);
    expect(m.nodes.src?.recordsOutPerSecond).toBe(0);
  });

  it("omits busy and backpressure when the runner does not report them", () => {
    const m = toLiveMetrics("dep", b, a);
    expect(m.nodes.src).not.toHaveProperty("busyTimeMsPerSecond");
    expect(m.nodes.src).not.toHaveProperty("backPressuredTimeMsPerSecond");
  });

  it("takes busy and backpressure from the node, or the worst subtask running it", () => {
    const withNode = snap("2026-06-01T09:00:03Z", { s: { type: "t", busyTimeMsPerSecond: 900, backPressuredTimeMsPerSecond: 0 } });
    expect(toLiveMetrics("d", withNode, undefined).nodes.s?.busyTimeMsPerSecond).toBe(900);
    const withTasks = snap(
      "2026-06-01T09:00:03Z",
      { k: { type: "velocity" } },
      {
        subtasks: [
          { task: "keyed", subtask: 0, nodes: ["k"], busyTimeMsPerSecond: 300, backPressuredTimeMsPerSecond: 600, idleTimeMsPerSecond: 100, queuedRecords: 10 },
          { task: "keyed", subtask: 1, nodes: ["k"], busyTimeMsPerSecond: 200, backPressuredTimeMsPerSecond: 700, idleTimeMsPerSecond: 100, queuedRecords: 5 },
        ],
      },
    );
    const k = toLiveMetrics("d", withTasks, undefined).nodes.k;
    expect(k?.busyTimeMsPerSecond).toBe(300);
    expect(k?.backPressuredTimeMsPerSecond).toBe(700);
    expect(k?.queuedRecords).toBe(15);
  });
});

describe("history and sparkline", () => {
  it("keeps the last two minutes of rates per node", () => {
    let h: ReturnType<typeof appendHistory> = new Map();
    const base = snap("2026-06-01T09:00:00Z", { n: { type: "t", recordsIn: 0 } });
    for (let i = 0; i < 200; i++) {
      const m = toLiveMetrics("d", { ...base, time: new Date(Date.parse("2026-06-01T09:00:00Z") + i * 1000).toISOString() }, undefined);
      h = appendHistory(h, m);
    }
    expect(h.get("n")?.length).toBe(120);
  });
  it("draws values into the box, the largest at the top", () => {
    expect(sparklinePoints([0, 10, 5], 100, 20)).toBe("0,19.5 50,0.5 100,10");
    expect(sparklinePoints([], 100, 20)).toBe("");
  });
});

describe("edgeFlows", () => {
  const m = toLiveMetrics(
    "d",
    snap("2026-06-01T09:00:01Z", {
      src: { type: "source.demo", recordsOut: 200 },
      by: { type: "keyBy", recordsIn: 200, recordsOut: 200 },
      vel: { type: "velocity", recordsIn: 190, recordsOut: 4, late: 10 },
      sink: { type: "sink.file", recordsIn: 4 },
      lateSink: { type: "sink.file", recordsIn: 10 },
    }),
    snap("2026-06-01T09:00:00Z", {
      src: { type: "source.demo" },
      by: { type: "keyBy" },
      vel: { type: "velocity" },
      sink: { type: "sink.file" },
      lateSink: { type: "sink.file" },
    }),
  );
  it("carries the target's input rate, or the late rate on a late edge", () => {
    const flows = edgeFlows(
      [
        { from: "src", to: "by" },
        { from: "by", to: "vel" },
        { from: "vel", to: "sink" },
        { from: "vel:late", to: "lateSink" },
      ],
      m.nodes,
    );
    expect(flows.get("src->by")?.recordsPerSecond).toBe(200);
    expect(flows.get("by->vel")?.recordsPerSecond).toBe(190);
    expect(flows.get("vel->sink")?.recordsPerSecond).toBe(4);
    expect(flows.get("vel:late->lateSink")?.recordsPerSecond).toBe(10);
    expect(flows.get("src->by")!.strokeWidth).toBeGreaterThan(flows.get("vel->sink")!.strokeWidth);
  });
  it("grows thicker with throughput, within bounds", () => {
    expect(strokeWidthFor(0)).toBe(1.5);
    expect(strokeWidthFor(10)).toBeLessThan(strokeWidthFor(1000));
    expect(strokeWidthFor(1e12)).toBe(8);
  });
});

describe("format", () => {
  it("writes rates, bytes and lags", () => {
    expect(formatRate(0)).toBe("0/s");
    expect(formatRate(3.25)).toBe("3.3/s");
    expect(formatRate(200)).toBe("200/s");
    expect(formatRate(1530)).toBe("1.5k/s");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(4096)).toBe("4.0 KiB");
    expect(formatBytes(5 * 1024 * 1024 * 1024)).toBe("5.0 GiB");
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_340)).toBe("12.3 s");
    expect(formatDuration(245_000)).toBe("4m 05s");
    expect(formatWatermarkLag(null, 0)).toBe("none");
    expect(formatWatermarkLag(1000, 3500)).toBe("2.5 s");
  });
});
