// @vitest-environment happy-dom
// The Sources and Skew panels render what the runner's snapshot says: partition states (active,
// lagging, idle) with lag and watermark lag, and a skewed subtask flagged with the salt hint.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import { runnerSnapshotSchema, toLiveMetrics } from "../../live/metrics";
import { StaticLiveProvider, type LiveValue } from "../live/LiveContext";
import { SkewPanel } from "./SkewPanel";
import { SourcesPanel } from "./SourcesPanel";

afterEach(cleanup);

const AT = Date.parse("2026-06-01T09:00:00Z");

function live(extra: Record<string, unknown>): LiveValue {
  const snap = runnerSnapshotSchema.parse({ jobId: "d", time: new Date(AT).toISOString(), nodes: {}, ...extra });
  return { deploymentId: "d", metrics: toLiveMetrics("d", snap, undefined), history: new Map(), verdicts: {}, flows: new Map(), status: "pending", error: null };
}

describe("SourcesPanel", () => {
  it("shows each partition's state, records, offset, lag and watermark lag as the runner reports them", () => {
    const value = live({
      sourcePartitions: {
        payments: {
          input: "payments-topic",
          partitions: [
            { partition: 0, records: 1500, lastOffset: "1499", lastRecordAt: AT, idle: false, lag: 0, watermark: AT - 2_000 },
            { partition: 1, records: 900, lastOffset: "899", lastRecordAt: AT, idle: false, lag: 600, watermark: null },
            { partition: 2, records: 0, lastOffset: null, lastRecordAt: null, idle: true, lag: 0, watermark: null },
          ],
        },
      },
    });
    render(
      <StaticLiveProvider value={value}>
        <SourcesPanel />
      </StaticLiveProvider>,
    );
    expect(screen.getByTestId("source-payments").textContent).toMatch(/payments · payments-topic · 3 partitions · 1 idle/);
    expect(screen.getByTestId("partition-payments-0").getAttribute("data-state")).toBe("active");
    expect(screen.getByTestId("partition-payments-0").textContent).toBe("0active1500149902.0 s");
    expect(screen.getByTestId("partition-payments-1").getAttribute("data-state")).toBe("lagging");
    expect(screen.getByTestId("partition-payments-1").textContent).toBe("1lagging900899600–");
    expect(screen.getByTestId("partition-payments-2").getAttribute("data-state")).toBe("idle");
  });
});

describe("SkewPanel", () => {
  it("flags the overloaded subtask with its hot key and the hint to salt the key", () => {
    const value = live({
      skew: [
        {
          node: "byCard",
          records: [100, 100, 700, 100],
          mean: 250,
          skewedSubtasks: [2],
          hotKeys: [
            { key: "card-7", count: 560, error: 16, subtask: 2, share: 0.56 },
            { key: "card-1", count: 40, error: 0, subtask: 0, share: 0.04 },
          ],
        },
      ],
    });
    render(
      <StaticLiveProvider value={value}>
        <SkewPanel />
      </StaticLiveProvider>,
    );
    expect(screen.getByTestId("skew-byCard").getAttribute("data-skewed")).toBe("yes");
    expect(screen.getByTestId("skew-byCard-subtask-2").textContent).toBe("27002.80");
    expect(screen.getByTestId("skew-hint-byCard").textContent).toMatch(/subtask 2 of "byCard" carries more than twice the mean load \(hottest: "card-7" 56 %\)\. Salt the key \(keyBy \{ salt: N \}\)/);
    expect(screen.getByRole("table", { name: "hottest keys of byCard" }).textContent).toMatch(/card-7560.*56 %2/);
  });

  it("says skew needs a parallel job when the runner reports none", () => {
    render(
      <StaticLiveProvider value={live({})}>
        <SkewPanel />
      </StaticLiveProvider>,
    );
    expect(screen.getByTestId("skew-panel").textContent).toMatch(/parallel job/);
  });
});
