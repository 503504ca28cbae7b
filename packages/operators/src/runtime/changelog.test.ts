import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PipelineDocumentInput } from "../pipeline/document";
import { joinPieces } from "../core/snapshot-codec";
import { SnapshotHold } from "../core/state";
import { resolveChangelog } from "./changelog";
import { LocalJob, type JobEmission } from "./job";

// Keyed operators of every storage: eager and ordered velocity (adopted slot tables), dedup and a
// tumbling count (their own tables), topK (map state), sessionize (heap tables and timers).
const pipeline: PipelineDocumentInput = {
  format: "keyflow.pipeline/v1",
  name: "changelog",
  nodes: [
    { id: "pay", type: "source.file", params: { path: "pay.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 5 } },
    { id: "byCard", type: "keyBy", params: { field: "card" } },
    { id: "dedup", type: "dedup", params: { field: "id", ttlMs: 30 } },
    { id: "eager", type: "velocity", params: { threshold: 2, windowMs: 20, mode: "eager" } },
    { id: "ordered", type: "velocity", params: { threshold: 2, windowMs: 20 } },
    { id: "count", type: "window.tumbling", params: { sizeMs: 10, aggregate: { op: "count" } } },
    { id: "top", type: "topK", params: { field: "merchant", k: 2 } },
    { id: "sessions", type: "sessionize", params: { gapMs: 15 } },
    { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
  ],
  edges: [
    ["pay", "dedup"],
    ["dedup", "out"],
    ["pay", "byCard"],
    ["byCard", "eager"],
    ["byCard", "ordered"],
    ["byCard", "count"],
    ["byCard", "top"],
    ["byCard", "sessions"],
    ["eager", "out"],
    ["ordered", "out"],
    ["count", "out"],
    ["top", "out"],
    ["sessions", "out"],
  ].map(([from, to]) => ({ from: from as string, to: to as string })),
};

type Step =
  | { t: "records"; records: Array<{ card: number; id: number; merchant: number; dt: number }> }
  | { t: "whole" }
  | { t: "changes" }
  | { t: "base" }
  | { t: "materialize"; values: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ t: fc.constant("records" as const), records: fc.array(fc.record({ card: fc.nat(12), id: fc.nat(40), merchant: fc.nat(3), dt: fc.nat(6) }), { maxLength: 12 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("whole" as const) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("changes" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("base" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("materialize" as const), values: fc.integer({ min: 1, max: 8 }) }) },
);

/** Short ASCII keys, and non-ASCII ones and ones of 32 characters or more (other MessagePack string headers). */
const cardKey = (n: number): string => (n % 4 === 1 ? `carte-é${n}` : n % 4 === 2 ? `card-${"x".repeat(30)}${n}` : `c${n}`);

describe("changelog checkpoints (resolveChangelog)", () => {
  it("a chain of changes over a whole snapshot, or over any snapshot taken before them, restores the state at its newest, and the output goes on the same", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.array(fc.record({ card: fc.nat(12), id: fc.nat(40), merchant: fc.nat(3), dt: fc.nat(6) }), { maxLength: 15 }), (steps, tail) => {
        const job = LocalJob.create(pipeline);
        // The same input without checkpoints: its snapshot is the state each checkpoint must restore
        // to (a snapshot of the checkpointed job itself would pack its state and change what the next
        // checkpoint has to log).
        const twin = LocalJob.create(pipeline);
        let ts = 0;
        const push = (target: LocalJob, rs: ReadonlyArray<{ card: number; id: number; merchant: number; dt: number }>, from: number): number => {
          let t = from;
          for (const r of rs) {
            t += r.dt;
            target.pushValue("pay", { card: cardKey(r.card), id: `p${r.id}`, merchant: `m${r.merchant}`, ts: t }, { partition: 0 });
          }
          return t;
        };
        // The chain since the last "whole" snapshot, and plain snapshots taken since, each with how much of the chain came before it.
        let chain: Uint8Array[] | undefined;
        const bases: Array<{ bytes: Uint8Array; after: number }> = [];
        let newestWhole: Uint8Array | undefined;
        const held: SnapshotHold[] = [];
        for (const s of steps) {
          if (s.t === "records") {
            push(twin, s.records, ts);
            twin.drain();
            ts = push(job, s.records, ts);
            job.drain();
          } else if (s.t === "materialize") job.materialize(s.values);
          else if (s.t === "base") {
            if (chain !== undefined) bases.push({ bytes: job.snapshot(), after: chain.length });
          } else if (s.t === "whole" || chain !== undefined) {
            // A checkpoint being written holds its pieces while the job goes on; it is released at the next.
            const hold = new SnapshotHold();
            const bytes = joinPieces(job.snapshotPieces(hold, s.t));
            held.splice(0).forEach((h) => h.release());
            held.push(hold);
            if (s.t === "whole") {
              chain = [bytes];
              bases.length = 0;
            } else chain?.push(bytes);
            newestWhole = twin.snapshot();
          }
        }
        if (chain === undefined || newestWhole === undefined) return;
        const expected = LocalJob.restore(pipeline, newestWhole);
        const expectedSnapshot = expected.snapshot();
        const expectedOut = (): JobEmission[] => {
          const j = LocalJob.restore(pipeline, newestWhole as Uint8Array);
          push(j, tail, ts);
          j.endOfInput("pay");
          return j.drain();
        };
        const want = expectedOut();
        // A plain snapshot stands for the state at the newest checkpoint once changes were recorded after it.
        const overBases = bases.filter((b) => b.after < (chain as Uint8Array[]).length).map((b) => [b.bytes, ...(chain as Uint8Array[]).slice(b.after)]);
        for (const c of [chain, ...overBases]) {
          const restored = LocalJob.restore(pipeline, resolveChangelog(c));
          expect(Buffer.from(restored.snapshot()).equals(Buffer.from(expectedSnapshot))).toBe(true);
          push(restored, tail, ts);
          restored.endOfInput("pay");
          expect(restored.drain()).toEqual(want);
        }
      }),
      { numRuns: 150 },
    );
  });

  it("writes only what changed: a checkpoint after one key changed holds that key, and one after a key expired lists it as deleted", () => {
    // Operators whose tables all record their changes and whose timers are implied by their state
    // (dedup's tables, and timers, are written whole at every checkpoint).
    const recording = new Set(["pay", "byCard", "eager", "ordered", "count", "out"]);
    const job = LocalJob.create({ ...pipeline, nodes: pipeline.nodes.filter((n) => recording.has(n.id)), edges: (pipeline.edges ?? []).filter((e) => recording.has(e.from) && recording.has(e.to)) });
    for (let i = 0; i < 200; i++) job.pushValue("pay", { card: `c${i}`, id: `p${i}`, merchant: "m0", ts: 1 }, { partition: 0 });
    job.drain();
    const whole = joinPieces(job.snapshotPieces(undefined, "whole"));
    job.pushValue("pay", { card: "c7", id: "q", merchant: "m1", ts: 2 }, { partition: 0 });
    job.drain();
    const changes = joinPieces(job.snapshotPieces(undefined, "changes"));
    expect(changes.byteLength).toBeLessThan(whole.byteLength / 10);
    expect(Buffer.from(changes).includes("c7")).toBe(true);
    expect(Buffer.from(changes).includes("c8")).toBe(false);
    // A checkpoint with no change in between lists no key.
    expect(Buffer.from(joinPieces(job.snapshotPieces(undefined, "changes"))).includes("c7")).toBe(false);
    // A snapshot of changes alone is refused by a restore, naming what it lacks.
    expect(() => LocalJob.restore(job.document, changes)).toThrow(/holds only its changes since an earlier checkpoint/);
    // Far past every window and TTL: every key's state goes, and the changes say so.
    job.pushValue("pay", { card: "c0", id: "late", merchant: "m0", ts: 10_000 }, { partition: 0 });
    job.drain();
    const expiry = joinPieces(job.snapshotPieces(undefined, "changes"));
    const restored = LocalJob.restore(job.document, resolveChangelog([whole, changes, expiry]));
    expect(Buffer.from(restored.snapshot()).equals(Buffer.from(job.snapshot()))).toBe(true);
    expect(Buffer.from(expiry).includes("c150")).toBe(true);
  });
});
