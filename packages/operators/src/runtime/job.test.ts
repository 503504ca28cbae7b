import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PipelineDocumentInput } from "../pipeline/document";
import { decodeSnapshot, encodeSnapshot, joinPieces } from "../core/snapshot-codec";
import { LocalJob, PipelineInvalidError, type JobEmission } from "./job";

const doc = (nodes: PipelineDocumentInput["nodes"], edges: Array<[string, string]>, name = "test"): PipelineDocumentInput => ({
  format: "keyflow.pipeline/v1",
  name,
  nodes,
  edges: edges.map(([from, to]) => ({ from, to })),
});

const src = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: "source.file", params: { path: `${id}.jsonl`, timestampField: "ts", maxOutOfOrdernessMs: 0, ...extra } });
const sink = (id: string) => ({ id, type: "sink.file", params: { path: `${id}.jsonl` } });

/** source -> keyBy(card) -> tumbling count 10 ms -> out; late -> lateSink */
const windowed = (withLateSink: boolean) =>
  doc(
    [
      src("pay"),
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } },
      sink("out"),
      ...(withLateSink ? [sink("lateOut")] : []),
    ],
    [["pay", "byCard"], ["byCard", "win"], ["win", "out"], ...(withLateSink ? ([["win:late", "lateOut"]] as Array<[string, string]>) : [])],
  );

const sinkValues = (es: JobEmission[], nodeId?: string) => es.filter((e) => e.kind === "sink" && (nodeId === undefined || e.nodeId === nodeId)).map((e) => (e.kind === "sink" ? e.value : null));

describe("LocalJob", () => {
  it("routes records through keyed windows to sinks and fires everything at end of input", () => {
    const job = LocalJob.create(windowed(true));
    let line = 0;
    for (const [card, ts] of [["a", 1], ["b", 2], ["a", 5], ["a", 12]] as const) job.pushRaw("pay", JSON.stringify({ card, ts }), { partition: 0, line: ++line });
    expect(sinkValues(job.drain())).toEqual([
      { key: "a", windowStart: 0, windowEnd: 10, value: 2 },
      { key: "b", windowStart: 0, windowEnd: 10, value: 1 },
    ]);
    job.pushRaw("pay", JSON.stringify({ card: "c", ts: 3 }), { partition: 0, line: ++line }); // late: watermark is 11
    expect(job.drain()).toEqual([{ kind: "sink", nodeId: "lateOut", value: { card: "c", ts: 3 }, timestamp: 3, key: "c" }]);
    job.endOfInput("pay");
    expect(job.drain()).toEqual([{ kind: "sink", nodeId: "out", value: { key: "a", windowStart: 10, windowEnd: 20, value: 1 }, timestamp: 19, key: "a" }]);
    const m = job.metrics();
    expect(m.pay).toMatchObject({ recordsIn: 5, recordsOut: 5, watermark: Infinity });
    expect(m.win).toMatchObject({ recordsIn: 5, recordsOut: 4, late: 1, keys: 0, timers: 0 });
    expect(m.out?.recordsIn).toBe(3);
  });

  it("sends late records on an unconnected late port to the dead letters, never dropping them", () => {
    const job = LocalJob.create(windowed(false));
    job.pushValue("pay", { card: "a", ts: 20 }, { partition: 0 });
    job.pushValue("pay", { card: "a", ts: 3 }, { partition: 0 });
    expect(job.drain()).toEqual([
      { kind: "deadLetter", nodeId: "win", port: "late", reason: 'node "win": late record (timestamp 3 <= watermark 19); connect the "late" port to handle late records', value: { card: "a", ts: 3 } },
    ]);
    expect(job.metrics().win?.deadLetters).toBe(1);
  });

  it("dead-letters malformed input with the reason and its origin, and keeps running", () => {
    const job = LocalJob.create(windowed(true));
    job.pushRaw("pay", "{not json", { partition: 0, path: "pay.jsonl", line: 1 });
    job.pushRaw("pay", '{"card":"a"}', { partition: 2, topic: "payments", offset: "17" });
    job.pushRaw("pay", '{"card":"a","ts":"soon"}', { partition: 0, line: 3 });
    job.pushRaw("pay", "[1,2]", { partition: 0, line: 4 });
    job.pushRaw("pay", new Uint8Array([0xff, 0xfe]), { partition: 0, line: 5 });
    job.pushRaw("pay", '{"ts":1}', { partition: 0, line: 6 });
    job.pushRaw("pay", '{"card":"a","ts":"1970-01-01T00:00:00.004Z"}', { partition: 0, line: 7 });
    job.pushRaw("pay", '{"card":"a","ts":5,"meta":[{"__proto__":{"admin":true}}]}', { partition: 0, line: 8 });
    job.pushRaw("pay", '{"card":"a","ts":6,"note":"__proto__ in a value is fine"}', { partition: 0, line: 9 });
    job.pushRaw("pay", '{"card":"a","ts":7,"\\u005f_proto__":{"admin":true}}', { partition: 0, line: 10 });
    const es = job.drain();
    const dl = es.filter((e) => e.kind === "deadLetter");
    expect(dl.map((e) => (e.kind === "deadLetter" ? e.reason : ""))).toEqual([
      expect.stringMatching(/^source "pay" \(partition 0, file pay\.jsonl, line 1\): the record is not valid JSON/),
      'source "pay" (partition 2, topic payments, offset 17): the record has no event time: timestamp field "ts" is missing',
      'source "pay" (partition 0, line 3): the record has no event time: timestamp field "ts" is "soon", neither epoch milliseconds nor an ISO-8601 date-time',
      'source "pay" (partition 0, line 4): the record is an array, not a JSON object',
      'source "pay" (partition 0, line 5): the record is not valid UTF-8',
      'node "byCard": field "card" is missing; records without a key cannot be keyed (filter them out first)',
      'source "pay" (partition 0, line 8): the record has a field named "__proto__" ($.meta[0].__proto__), which Keyflow does not accept: it could not be checkpointed and restored unchanged',
      'source "pay" (partition 0, line 10): the record has a field named "__proto__" ($.__proto__), which Keyflow does not accept: it could not be checkpointed and restored unchanged',
    ]);
    expect(dl[0]).toMatchObject({ raw: "{not json", origin: { sourceNodeId: "pay", path: "pay.jsonl", line: 1, partition: 0 } });
    expect(dl[5]).toMatchObject({ nodeId: "byCard", port: "errors", value: { ts: 1 } });
    expect(dl[6]).toMatchObject({ raw: '{"card":"a","ts":5,"meta":[{"__proto__":{"admin":true}}]}' });
    job.endOfInput("pay");
    expect(sinkValues(job.drain(), "out")).toEqual([{ key: "a", windowStart: 0, windowEnd: 10, value: 2 }]);
    expect(job.metrics().pay).toMatchObject({ recordsIn: 10, recordsOut: 3, deadLetters: 7 });
  });

  it("computes the source watermark per partition (min over non-idle partitions), after each record", () => {
    const job = LocalJob.create(windowed(true));
    job.pushValue("pay", { card: "a", ts: 5 }, { partition: 0 });
    job.pushValue("pay", { card: "a", ts: 25 }, { partition: 0 });
    expect(job.metrics().pay?.watermark).toBe(24);
    job.pushValue("pay", { card: "b", ts: 3 }, { partition: 1 }); // a new partition holds the watermark... not backwards
    expect(job.metrics().pay?.watermark).toBe(24);
    job.pushValue("pay", { card: "b", ts: 40 }, { partition: 0 });
    expect(job.metrics().pay?.watermark).toBe(24); // partition 1 is at 2
    job.markPartitionIdle("pay", 1);
    expect(job.metrics().pay?.watermark).toBe(39);
    job.pushValue("pay", { card: "b", ts: 30 }, { partition: 1 }); // active again: late (30 <= 39)
    const lateOut = job.drain().filter((e) => e.kind === "sink" && e.nodeId === "lateOut");
    expect(lateOut).toHaveLength(2); // ts 3 (watermark 24 at arrival) and ts 30
  });

  it("marks partitions idle after idleTimeoutMs of injected processing time without records", () => {
    const job = LocalJob.create(doc([src("pay", { idleTimeoutMs: 1_000 }), { id: "by", type: "keyBy", params: { field: "card" } }, { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } }, sink("out")], [["pay", "by"], ["by", "win"], ["win", "out"]]), { processingTime: 0 });
    job.pushValue("pay", { card: "a", ts: 1 }, { partition: 0 });
    job.advanceProcessingTime(500);
    job.pushValue("pay", { card: "a", ts: 30 }, { partition: 1 });
    expect(job.metrics().pay?.watermark).toBe(0); // partition 0 holds it back
    job.advanceProcessingTime(1_200); // partition 0 silent for 1200 ms, partition 1 for 700 ms
    expect(job.metrics().pay?.watermark).toBe(29);
    expect(sinkValues(job.drain())).toEqual([{ key: "a", windowStart: 0, windowEnd: 10, value: 1 }]);
  });

  it("judges lateness against the watermark before the record moves it", () => {
    const job = LocalJob.create(doc([src("pay", { maxOutOfOrdernessMs: 5 }), { id: "by", type: "keyBy", params: { field: "card" } }, { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } }, sink("out"), sink("late")], [["pay", "by"], ["by", "win"], ["win", "out"], ["win:late", "late"]]));
    job.pushValue("pay", { card: "a", ts: 15 }, { partition: 0 }); // watermark 9
    job.pushValue("pay", { card: "a", ts: 9 }, { partition: 0 }); // window [0,10) fired at watermark 9: late
    job.pushValue("pay", { card: "a", ts: 10 }, { partition: 0 }); // on time
    job.endOfInput("pay");
    expect(job.drain().map((e) => (e.kind === "sink" ? [e.nodeId, e.value] : e.kind))).toEqual([
      ["late", { card: "a", ts: 9 }],
      ["out", { key: "a", windowStart: 10, windowEnd: 20, value: 2 }],
    ]);
  });

  it("takes the minimum watermark over several sources; an idle source stops holding it back", () => {
    const d = doc(
      [src("s1"), src("s2"), { id: "u", type: "union", params: {} }, { id: "by", type: "keyBy", params: { field: "card" } }, { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } }, sink("out")],
      [["s1", "u"], ["s2", "u"], ["u", "by"], ["by", "win"], ["win", "out"]],
    );
    const job = LocalJob.create(d);
    job.pushValue("s1", { card: "a", ts: 1 }, { partition: 0 });
    job.pushValue("s1", { card: "a", ts: 50 }, { partition: 0 });
    expect(job.drain()).toEqual([]); // s2 has not spoken: nothing fires
    job.pushValue("s2", { card: "a", ts: 20 }, { partition: 0 });
    expect(sinkValues(job.drain())).toEqual([{ key: "a", windowStart: 0, windowEnd: 10, value: 1 }]);
    job.markPartitionIdle("s2", 0);
    expect(sinkValues(job.drain())).toEqual([{ key: "a", windowStart: 20, windowEnd: 30, value: 1 }]);
    job.endOfInput("s1");
    job.endOfInput("s2");
    expect(sinkValues(job.drain())).toEqual([{ key: "a", windowStart: 50, windowEnd: 60, value: 1 }]);
  });

  it("routes named side-output ports and unconnected errors to dead letters with the operator's reason", () => {
    const d = doc(
      [src("pay"), { id: "big", type: "filter", params: { expression: "amount > 10" } }, sink("out"), { id: "by", type: "keyBy", params: { field: "card" } }, { id: "sum", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "sum", field: "amount" } } }, sink("sums"), sink("errs")],
      [["pay", "big"], ["big", "out"], ["pay", "by"], ["by", "sum"], ["sum", "sums"], ["sum:errors", "errs"]],
    );
    const job = LocalJob.create(d);
    job.pushValue("pay", { card: "a", amount: 20, ts: 1 }, { partition: 0 });
    job.pushValue("pay", { card: "a", amount: "lots", ts: 2 }, { partition: 0 });
    job.endOfInput("pay");
    const es = job.drain();
    expect(es.map((e) => [e.kind, e.nodeId])).toEqual([
      ["sink", "out"],
      ["deadLetter", "big"],
      ["sink", "errs"],
      ["sink", "sums"],
    ]);
    expect(es[1]).toMatchObject({ port: "errors", value: { card: "a", amount: "lots", ts: 2 }, reason: expect.stringMatching(/^node "big": /) });
    expect(es[2]).toMatchObject({ value: { error: 'node "sum": field "amount" is "lots", not a number', record: { card: "a", amount: "lots", ts: 2 } } });
  });

  it("refuses an invalid pipeline with issues naming the node", () => {
    const bad = doc([src("pay"), { id: "win", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "sum" } } }, sink("out")], [["pay", "win"], ["win", "out"]]);
    let err: unknown;
    try {
      LocalJob.create(bad);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PipelineInvalidError);
    expect((err as PipelineInvalidError).issues.some((i) => i.nodeId === "win")).toBe(true);
    expect((err as Error).message).toMatch(/node "win"/);
  });

  it("a snapshot taken at any record, restored, gives exactly the uninterrupted output", () => {
    const events = fc.array(fc.record({ card: fc.constantFrom("a", "b", "c"), ts: fc.integer({ min: 0, max: 100 }), p: fc.integer({ min: 0, max: 1 }) }), { maxLength: 40 });
    fc.assert(
      fc.property(events, fc.nat(), (evs, cutSeed) => {
        const d = windowed(true);
        const runAll = (cut: number | undefined): JobEmission[] => {
          let job = LocalJob.create(d);
          const out: JobEmission[] = [];
          evs.forEach((e, i) => {
            if (i === cut) {
              out.push(...job.drain());
              job = LocalJob.restore(d, job.snapshot());
            }
            job.pushValue("pay", { card: e.card, ts: e.ts }, { partition: e.p });
          });
          job.endOfInput("pay");
          return [...out, ...job.drain()];
        };
        const cut = evs.length === 0 ? undefined : cutSeed % evs.length;
        expect(runAll(cut)).toEqual(runAll(undefined));
      }),
      { numRuns: 60 },
    );
  });

  it("keyGroupRange splits keyed work between subtasks without overlap", () => {
    const d = windowed(true);
    const feed = (job: LocalJob): JobEmission[] => {
      for (let i = 0; i < 200; i++) job.pushValue("pay", { card: `c${i % 37}`, ts: i }, { partition: 0 });
      job.endOfInput("pay");
      return job.drain();
    };
    const all = feed(LocalJob.create(d));
    const low = feed(LocalJob.create(d, { keyGroupRange: { start: 0, end: 63 } }));
    const high = feed(LocalJob.create(d, { keyGroupRange: { start: 64, end: 127 } }));
    expect(low.length).toBeGreaterThan(0);
    expect(high.length).toBeGreaterThan(0);
    const key = (e: JobEmission) => JSON.stringify(e);
    expect([...low, ...high].map(key).sort()).toEqual(all.map(key).sort());
  });

  it("exposes its sources and sinks with parsed params", () => {
    const job = LocalJob.create(windowed(true));
    expect(job.sources).toEqual([{ nodeId: "pay", type: "source.file", params: expect.objectContaining({ path: "pay.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 }) }]);
    expect(job.sinks.map((s) => s.nodeId)).toEqual(["out", "lateOut"]);
  });

  it("snapshots in pieces that are the state's own packed arrays, unchanged by what the job does next, with the bytes a restore reads", () => {
    // Enough keys that key groups' columns and timer ranges pass the size from which they are referenced, not copied.
    const d = doc(
      [
        src("pay", { maxOutOfOrdernessMs: 1000 }),
        { id: "byCard", type: "keyBy", params: { field: "card" } },
        { id: "dedup", type: "dedup", params: { field: "id", ttlMs: 60_000 } },
        { id: "vel", type: "velocity", params: { threshold: 3, windowMs: 10_000, mode: "eager" } },
        { id: "win", type: "window.tumbling", params: { sizeMs: 5_000, aggregate: { op: "count" } } },
        sink("alerts"),
        sink("counts"),
      ],
      [["pay", "byCard"], ["byCard", "dedup"], ["dedup", "vel"], ["vel", "alerts"], ["byCard", "win"], ["win", "counts"]],
    );
    const records = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: `p${from + i}`, card: `c${((from + i) * 7919) % 50_000}`, ts: 1_000 + Math.floor((from + i) / 10) }));
    const run = (job: LocalJob, rs: ReadonlyArray<{ id: string; card: string; ts: number }>) => {
      for (const r of rs) job.pushValue("pay", r, { partition: 0 });
      return job.drain();
    };
    const job = LocalJob.create(d);
    run(job, records(0, 60_000));
    const pieces = job.snapshotPieces();
    const bytes = joinPieces(pieces);
    expect(pieces.pieces.length).toBeGreaterThan(100);
    expect(Buffer.from(bytes).equals(Buffer.from(job.snapshot()))).toBe(true);
    // The encoding of the decoded snapshot gives the same bytes: nothing was written differently.
    expect(Buffer.from(encodeSnapshot(decodeSnapshot(bytes))).equals(Buffer.from(bytes))).toBe(true);
    // The job goes on (every key group changes): the pieces handed out still hold the snapshot.
    const next = records(60_000, 30_000);
    const continued = run(job, next);
    expect(Buffer.from(joinPieces(pieces)).equals(Buffer.from(bytes))).toBe(true);
    expect(run(LocalJob.restore(d, bytes), next)).toEqual(continued);
  });
});

