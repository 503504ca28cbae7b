// Task boundaries (LocalJobOptions.remote) and rescaling (mergeJobSnapshots): a job split into a
// source task and keyed subtasks computes what the whole job computes, and its subtasks' snapshots
// restore at another parallelism with the same result.
import { describe, expect, it } from "vitest";
import { computeKeyGroupRangeForOperatorIndex, keyGroupOf, type KeyGroupRange } from "../core/keys";
import type { JsonObject, Key } from "../core/api";
import type { PipelineDocumentInput } from "../pipeline/document";
import { LocalJob, type JobEmission } from "./job";
import { mergeJobSnapshots } from "./rescale";

const pipeline: PipelineDocumentInput = {
  format: "keyflow.pipeline/v1",
  name: "split",
  nodes: [
    { id: "pay", type: "source.file", params: { path: "p.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "card" } },
    { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } },
    { id: "out", type: "sink.file", params: { path: "o.jsonl" } },
  ],
  edges: [
    { from: "pay", to: "byCard" },
    { from: "byCard", to: "win" },
    { from: "win", to: "out" },
  ],
};
const HEAD = new Set(["pay"]);
const KEYED = new Set(["byCard", "win"]);
const MAX_P = 128;

const records = Array.from({ length: 400 }, (_, i) => ({ card: `c${(i * 7) % 23}`, ts: i }));

/** A source task and `p` keyed subtasks wired directly (what the runner does over threads). */
class SplitJob {
  readonly head: LocalJob;
  readonly subtasks: LocalJob[];
  readonly ranges: KeyGroupRange[];
  constructor(p: number, restore?: { head: Uint8Array; keyed: Array<{ bytes: Uint8Array; range: KeyGroupRange }> }) {
    this.ranges = Array.from({ length: p }, (_, i) => computeKeyGroupRangeForOperatorIndex(MAX_P, p, i));
    this.subtasks = this.ranges.map((range) => {
      const opts = { keyGroupRange: range, remote: { nodes: HEAD, output: { record: () => {}, watermark: () => {}, idle: () => {} } } };
      if (!restore) return LocalJob.create(pipeline, opts);
      const parts = restore.keyed.filter((k) => k.range.start <= range.end && k.range.end >= range.start).map((k) => ({ bytes: k.bytes, primary: k.range.start >= range.start && k.range.start <= range.end }));
      return LocalJob.restore(pipeline, mergeJobSnapshots(parts), opts);
    });
    const owner = (key: Key) => {
      const g = keyGroupOf(key, MAX_P);
      return this.ranges.findIndex((r) => g >= r.start && g <= r.end);
    };
    const output = {
      record: (to: string, port: string, channel: number, value: JsonObject, timestamp: number) => this.subtasks[owner(String(value.card))]!.pushExchange(to, port, channel, value, timestamp, undefined),
      watermark: (to: string, channel: number, wm: number) => this.subtasks.forEach((s) => s.pushWatermark(to, channel, wm)),
      idle: (to: string, channel: number, idle: boolean) => this.subtasks.forEach((s) => s.markInputIdle(to, channel, idle)),
    };
    const opts = { remote: { nodes: KEYED, output } };
    this.head = restore ? LocalJob.restore(pipeline, restore.head, opts) : LocalJob.create(pipeline, opts);
  }
  drain(): JobEmission[] {
    return [...this.head.drain(), ...this.subtasks.flatMap((s) => s.drain())];
  }
  snapshot() {
    return { head: this.head.snapshot(), keyed: this.subtasks.map((s, i) => ({ bytes: s.snapshot(), range: this.ranges[i]! })) };
  }
}

const sorted = (es: JobEmission[]) =>
  es
    .filter((e) => e.kind === "sink")
    .map((e) => JSON.stringify(e.kind === "sink" ? e.value : null))
    .sort();

describe("task boundaries and rescaling", () => {
  const whole = LocalJob.create(pipeline);
  records.forEach((r, i) => whole.pushValue("pay", r, { partition: 0, line: i }));
  whole.endOfInput("pay");
  const expected = sorted(whole.drain());

  it("a source task and 2 keyed subtasks compute what the whole job computes", () => {
    const split = new SplitJob(2);
    records.forEach((r, i) => split.head.pushValue("pay", r, { partition: 0, line: i }));
    split.head.endOfInput("pay");
    expect(split.head.localNodes()).toEqual(["pay", "out"]);
    expect(split.subtasks[0]!.localNodes()).toEqual(["byCard", "win", "out"]);
    expect(sorted(split.drain())).toEqual(expected);
  });

  it.each([1, 3, 4])("subtask snapshots taken at parallelism 2 restore at %i", (p) => {
    const split = new SplitJob(2);
    records.slice(0, 150).forEach((r, i) => split.head.pushValue("pay", r, { partition: 0, line: i }));
    const before = split.drain();
    const snap = split.snapshot();
    const restored = new SplitJob(p, snap);
    records.slice(150).forEach((r, i) => restored.head.pushValue("pay", r, { partition: 0, line: 150 + i }));
    restored.head.endOfInput("pay");
    expect(sorted([...before, ...restored.drain()])).toEqual(expected);
    // Counters add up over the new subtasks exactly once.
    const total = (j: SplitJob) => j.subtasks.reduce((n, s) => n + (s.metrics().byCard?.recordsIn ?? 0), 0);
    expect(total(restored)).toBe(records.length);
  });

  it("a single-threaded job restores the merged task snapshots", () => {
    const split = new SplitJob(2);
    records.slice(0, 150).forEach((r, i) => split.head.pushValue("pay", r, { partition: 0, line: i }));
    const before = split.drain();
    const snap = split.snapshot();
    const job = LocalJob.restore(pipeline, mergeJobSnapshots([{ bytes: snap.head, primary: true }, ...snap.keyed.map((k) => ({ bytes: k.bytes, primary: true }))]));
    records.slice(150).forEach((r, i) => job.pushValue("pay", r, { partition: 0, line: 150 + i }));
    job.endOfInput("pay");
    expect(sorted([...before, ...job.drain()])).toEqual(expected);
    expect(job.metrics().byCard?.recordsIn).toBe(records.length);
  });
});
