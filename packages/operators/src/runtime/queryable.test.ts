import { describe, expect, it } from "vitest";
import { LocalJob } from "./job";
import { queryKeyState } from "./queryable";

const pipeline = {
  format: "keyflow.pipeline/v1",
  name: "q",
  nodes: [
    { id: "pay", type: "source.file", params: { path: "pay.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "card" } },
    { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } },
    { id: "dedup", type: "dedup", params: { field: "id", ttlMs: 100 } },
    { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
    { id: "out2", type: "sink.file", params: { path: "out2.jsonl" } },
  ],
  edges: [
    { from: "pay", to: "byCard" },
    { from: "byCard", to: "win" },
    { from: "win", to: "out" },
    { from: "pay", to: "dedup" },
    { from: "dedup", to: "out2" },
  ],
};

describe("queryKeyState (LocalJob.queryState)", () => {
  it("reads one key's state and timers out of a job snapshot, and nothing of the other keys", () => {
    const job = LocalJob.create(pipeline);
    job.pushValue("pay", { card: "a", id: "x1", ts: 1 }, { partition: 0 });
    job.pushValue("pay", { card: "a", id: "x2", ts: 2 }, { partition: 0 });
    job.pushValue("pay", { card: "b", id: "x3", ts: 3 }, { partition: 0 });
    job.drain();
    const snap = job.snapshot();

    const a = job.queryState("win", "a");
    expect(a?.state.length).toBeGreaterThan(0);
    expect(JSON.stringify(a?.state)).toContain("2"); // two records of "a" counted in its open window
    expect(a?.timers.eventTime.length).toBeGreaterThan(0);
    expect(a?.timers.eventTime.every((t) => t.time >= 9)).toBe(true);

    const x1 = job.queryState("dedup", "x1");
    expect(x1?.state.length).toBe(1);
    expect(x1?.timers.eventTime).toEqual([{ time: 101, namespace: expect.any(String) }]);

    const none = queryKeyState(snap, "win", "zzz");
    expect(none).toMatchObject({ state: [], timers: { eventTime: [], processingTime: [] } });
    // A stateless node holds nothing for any key; a node the snapshot lacks gives undefined.
    expect(queryKeyState(snap, "byCard", "a")).toMatchObject({ state: [], timers: { eventTime: [], processingTime: [] } });
    expect(queryKeyState(snap, "nope", "a")).toBeUndefined();
  });
});
