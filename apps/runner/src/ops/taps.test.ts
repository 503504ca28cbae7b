import { describe, expect, it } from "vitest";
import type { Connectors } from "../job/driver";
import type { DeadLetter, DeadLetterSink, RecordSink, RecordSource, SourceBatch } from "../io/types";
import { JobOps, TAP_CAPACITY } from "./job-ops";

const nullWriter = { target: "memory", open: async () => {}, prepareCommit: async () => null, commit: async () => {}, close: async () => {} };

function connectors(batches: SourceBatch[]): Connectors & { dead: DeadLetter[] } {
  const dead: DeadLetter[] = [];
  return {
    dead,
    source: (node): RecordSource => ({
      nodeId: node.nodeId,
      bounded: true,
      idleTimeoutMs: undefined,
      open: async () => null,
      run: async (emit) => {
        for (const b of batches) await emit(b);
      },
      close: async () => {},
    }),
    sink: (node): RecordSink => ({ ...nullWriter, nodeId: node.nodeId, write: async () => {} }),
    deadLetters: (): DeadLetterSink => ({ ...nullWriter, write: async (r) => void dead.push(...r) }),
    close: async () => {},
  };
}

describe("JobOps taps and source figures", () => {
  it("keeps the last records into each sink and the last dead letters of each node, with their reason", async () => {
    const ops = new JobOps(new Set(["out"]));
    const c = ops.wrapConnectors(connectors([]));
    const sink = c.sink({ nodeId: "out", type: "sink.file", params: {} });
    for (let i = 0; i < 30; i++) await sink.write([{ value: { i }, timestamp: 1000 + i, key: `k${i}` }]);
    const dl = c.deadLetters();
    await dl.write([
      { kind: "deadLetter", nodeId: "parse", reason: "not JSON", raw: "{oops" },
      { kind: "deadLetter", nodeId: "vel", port: "errors", reason: 'field "cardId" is missing', value: { amount: 3 } },
    ]);
    const out = ops.taps("out");
    expect(out.records.length).toBe(TAP_CAPACITY);
    expect(out.recordsSeen).toBe(30);
    expect(out.records.map((r) => r.value)).toEqual(Array.from({ length: 20 }, (_, k) => ({ i: k + 10 })));
    expect(out.records[19]).toMatchObject({ timestamp: 1029, key: "k29" });
    expect(ops.taps("vel").deadLetters).toEqual([expect.objectContaining({ nodeId: "vel", port: "errors", reason: 'field "cardId" is missing', value: { amount: 3 } })]);
    expect(ops.taps("parse").deadLetters[0]).toMatchObject({ reason: "not JSON", raw: "{oops", port: null });
    expect(ops.taps("nothing")).toEqual({ records: [], recordsSeen: 0, deadLetters: [], deadLettersSeen: 0 });
  });

  it("counts records per partition, the last offset, idle partitions and the watermark of parsed values", async () => {
    const ops = new JobOps(new Set());
    const batches: SourceBatch[] = [
      {
        records: [
          { kind: "value", value: { ts: 5_000 }, origin: { partition: 0, offset: "0" } },
          { kind: "value", value: { ts: 9_000 }, origin: { partition: 1, offset: "0" } },
          { kind: "value", value: { ts: 7_000 }, origin: { partition: 0, offset: "1" } },
        ],
        position: null,
      },
      { records: [], position: null, idlePartitions: [1] },
    ];
    const c = ops.wrapConnectors(connectors(batches));
    const src = c.source({ nodeId: "pay", type: "source.demo", params: { timestampField: "ts", maxOutOfOrdernessMs: 1000 } });
    await src.run(async () => {}, new AbortController().signal);
    const f = ops.sourceFigures()["pay"];
    expect(f?.input).toBeNull();
    expect(f?.partitions).toEqual([
      expect.objectContaining({ partition: 0, records: 2, lastOffset: "1", idle: false, lag: null, watermark: 5_999 }),
      expect.objectContaining({ partition: 1, records: 1, lastOffset: "0", idle: true, lag: null, watermark: 7_999 }),
    ]);
    expect(src.inputMetrics).toBeUndefined();
  });
});

describe("JobOps sink commit progress", () => {
  it("follows a checkpoint's two-phase commit through every sink, from the first prepare to the last commit", async () => {
    const ops = new JobOps(new Set(["a", "b"]));
    const c = ops.wrapConnectors(connectors([]));
    const a = c.sink({ nodeId: "a", type: "sink.file", params: {} });
    const b = c.sink({ nodeId: "b", type: "sink.file", params: {} });
    expect(ops.sinkCommitProgress()).toBeUndefined();
    const prepared = await a.prepareCommit(7);
    expect(ops.sinkCommitProgress()).toMatchObject({ id: 7, sinks: { a: "prepared", b: "waiting" } });
    await b.prepareCommit(7);
    await a.commit(7, prepared);
    expect(ops.sinkCommitProgress()).toMatchObject({ id: 7, sinks: { a: "committed", b: "prepared" } });
    await b.commit(7, null);
    expect(ops.sinkCommitProgress()).toBeUndefined();
  });
});
