// The disk state backend against the heap one: table operations through a small write-back cache,
// incremental checkpoint chains (full, deltas, deletions), restore by key-group range, and a job
// whose output and snapshot are the heap backend's, also across a checkpoint and restore.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { computeKeyGroupRangeForOperatorIndex, keyGroupOf, keyGroupRangeContains, LocalJob, type JobEmission, type LocalJobOptions } from "@keyflow/operators";
import { canonicalJobSnapshot } from "@keyflow/operators/testing";
import { afterEach, describe, expect, it } from "vitest";
import { DiskStateStore } from "./disk-store";
import type { DiskChain } from "./chain-files";

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});
function scratch(): string {
  const r = mkdtempSync(path.join(tmpdir(), "keyflow-disk-test-"));
  roots.push(r);
  return r;
}
function store(root: string, name: string, cacheEntries = 4, maxDeltas?: number): DiskStateStore {
  return new DiskStateStore({ dir: path.join(root, name), label: name, cacheEntries, ...(maxDeltas !== undefined ? { maxDeltas } : {}) });
}
const at = (root: string) => ({ resolve: (f: string) => path.resolve(root, "chk", f) });

describe("DiskStateStore tables", () => {
  it("reads its own writes through a cache smaller than the state, and counts keys and entries exactly", () => {
    const root = scratch();
    const s = store(root, "a");
    const b = s.backendFor("n");
    const t = b.table<{ c: number }>("counts", "value");
    for (let i = 0; i < 50; i++) t.put(`k${i}`, { c: i });
    for (let i = 0; i < 50; i += 5) t.delete(`k${i}`);
    t.delete("missing");
    expect(t.size).toBe(40);
    expect(t.get("k7")).toEqual({ c: 7 });
    expect(t.get("k5")).toBeUndefined();
    expect(t.has("k6")).toBe(true);
    const m = b.table<Map<string, number>>("perMerchant", "map");
    m.put("k1", new Map([["x", 1], ["y", 2]]));
    m.put("k99", new Map([["z", 3]]));
    expect(m.get("k1")).toEqual(new Map([["x", 1], ["y", 2]]));
    expect([...t.keys()]).toHaveLength(40);
    const stats = b.stats();
    expect(stats.keys).toBe(41); // k99 holds map state only
    expect(stats.stateEntries).toBe(40 + 3);
    expect(stats.stateBytes).toBeGreaterThan(0);
    s.close();
  });

  it("gives a snapshot equal to the heap backend's for the same writes", async () => {
    const { HeapKeyedStateBackend } = await import("@keyflow/operators");
    const heap = new HeapKeyedStateBackend();
    const s = store(scratch(), "a");
    const disk = s.backendFor("n");
    for (const be of [heap, disk]) {
      const v = be.table<number>("v", "value");
      const l = be.table<number[]>("l", "list");
      for (let i = 0; i < 30; i++) v.put(`key-${i}`, i * 1.5);
      for (let i = 0; i < 10; i++) l.put(`key-${i}`, [i, i + 1]);
      v.delete("key-3");
    }
    expect(disk.snapshot()).toEqual(heap.snapshot());
    s.close();
  });
});

describe("incremental checkpoints", () => {
  it("writes a full dump, then deltas of changed and deleted keys, and a chain restores the same state", () => {
    const root = scratch();
    const shared = path.join(root, "shared");
    const a = store(root, "a");
    const t = a.backendFor("n").table<number>("v", "value");
    for (let i = 0; i < 100; i++) t.put(`k${i}`, i);
    const c1 = a.writeCheckpoint(1, shared, "../shared", "x");
    expect(c1.files.map((f) => [f.kind, f.entries])).toEqual([["full", 100]]);
    t.put("k1", -1);
    t.delete("k2");
    t.put("k100", 100);
    const c2 = a.writeCheckpoint(2, shared, "../shared", "x");
    expect(c2.files.map((f) => [f.kind, f.entries])).toEqual([["full", 100], ["delta", 3]]);
    expect(c2.files[1]!.bytes).toBeLessThan(c2.files[0]!.bytes / 10);
    const nothing = a.writeCheckpoint(3, shared, "../shared", "x");
    expect(nothing.files.map((f) => f.entries)).toEqual([100, 3, 0]);

    const b = store(root, "b");
    b.load([{ chain: nothing, ...at(root) }]);
    const tb = b.backendFor("n").table<number>("v", "value");
    expect(tb.size).toBe(100);
    expect(tb.get("k1")).toBe(-1);
    expect(tb.get("k2")).toBeUndefined();
    expect(tb.get("k100")).toBe(100);
    expect(b.backendFor("n").snapshot()).toEqual(a.backendFor("n").snapshot());
    a.close();
    b.close();
  });

  it("writes a full dump again after maxDeltas deltas, so a restore replays a bounded chain", () => {
    const root = scratch();
    const a = store(root, "a", 4, 2);
    const t = a.backendFor("n").table<number>("v", "value");
    for (let i = 0; i < 1000; i++) t.put(`k${i}`, i);
    const kinds: string[][] = [];
    for (let id = 1; id <= 5; id++) {
      t.put(`k${id}`, -id);
      kinds.push(a.writeCheckpoint(id, path.join(root, "shared"), "../shared", "x").files.map((f) => f.kind));
    }
    expect(kinds).toEqual([["full"], ["full", "delta"], ["full", "delta", "delta"], ["full"], ["full", "delta"]]);
    a.close();
  });

  it("restores only a subtask's key groups from several subtasks' chains (rescale)", () => {
    const root = scratch();
    const shared = path.join(root, "shared");
    const maxP = 128;
    const chains: DiskChain[] = [];
    const all = Array.from({ length: 300 }, (_, i) => `card-${i}`);
    // Two old subtasks, each with its key groups' keys.
    for (let i = 0; i < 2; i++) {
      const range = computeKeyGroupRangeForOperatorIndex(maxP, 2, i);
      const s = store(root, `old${i}`);
      const t = s.backendFor("n").table<string>("v", "value");
      for (const k of all) if (keyGroupRangeContains(range, keyGroupOf(k, maxP))) t.put(k, k.toUpperCase());
      chains.push(s.writeCheckpoint(1, shared, "../shared", `s${i}`));
      s.close();
    }
    // Three new subtasks: together they hold every key once.
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const range = computeKeyGroupRangeForOperatorIndex(maxP, 3, i);
      const s = store(root, `new${i}`);
      s.load(chains.map((chain) => ({ chain, ...at(root) })), (k) => keyGroupRangeContains(range, keyGroupOf(k, maxP)));
      const t = s.backendFor("n").table<string>("v", "value");
      for (const k of t.keys()) {
        expect(keyGroupRangeContains(range, keyGroupOf(k, maxP))).toBe(true);
        expect(t.get(k)).toBe(k.toUpperCase());
        seen.push(k);
      }
      s.close();
    }
    expect(seen.sort()).toEqual([...all].sort());
  });
});

// ---- a job on both backends --------------------------------------------------------------------

const doc = {
  format: "keyflow.pipeline/v1",
  name: "disk-velocity",
  settings: {},
  nodes: [
    { id: "src", type: "source.file", params: { path: "in.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 1000 } },
    { id: "byCard", type: "keyBy", params: { field: "card" } },
    { id: "vel", type: "velocity", params: { threshold: 3, windowMs: 60_000, mode: "ordered" } },
    { id: "top", type: "topK", params: { field: "merchant", k: 2 } },
    { id: "alerts", type: "sink.file", params: { path: "alerts.jsonl" } },
    { id: "ranks", type: "sink.file", params: { path: "ranks.jsonl" } },
  ],
  edges: [
    { from: "src", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "byCard", to: "top" },
    { from: "vel", to: "alerts" },
    { from: "top", to: "ranks" },
  ],
};
const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ card: `c${(i * 7) % 200}`, merchant: `m${i % 9}`, ts: 1_700_000_000_000 + i * 500 }));

function feed(job: LocalJob, from: number, to: number): JobEmission[] {
  const out: JobEmission[] = [];
  for (let i = from; i < to; i++) {
    job.pushRaw("src", lines[i]!, { partition: 0, line: i + 1 });
    if (i % 100 === 99) out.push(...job.drain());
  }
  out.push(...job.drain());
  return out;
}

describe("a job on the disk backend", () => {
  it("emits what the heap backend emits and snapshots the same state, across a checkpoint and restore", () => {
    const root = scratch();
    const heap = LocalJob.create(doc);
    const heapOut = [...feed(heap, 0, 3000)];
    heap.endOfInput("src");
    heapOut.push(...heap.drain());

    const s1 = store(root, "run1", 64);
    const disk = (s: DiskStateStore): LocalJobOptions => ({ stateBackend: (id) => s.backendFor(id) });
    const first = LocalJob.create(doc, disk(s1));
    const out = feed(first, 0, 1500);
    s1.writeCheckpoint(1, path.join(root, "shared"), "../shared", "r1");
    out.push(...feed(first, 1500, 1600));
    // Checkpoint 2: the snapshot without keyed state, the delta over checkpoint 1 beside it.
    const snapshot = s1.referenceSnapshots(() => first.snapshot());
    const chain = s1.writeCheckpoint(2, path.join(root, "shared"), "../shared", "r1");
    expect(chain.files.map((f) => f.kind)).toEqual(["full", "delta"]);
    s1.close();

    const s2 = store(root, "run2", 64);
    s2.load([{ chain, ...at(root) }]);
    const second = LocalJob.restore(doc, snapshot, disk(s2));
    out.push(...feed(second, 1600, 3000));
    second.endOfInput("src");
    out.push(...second.drain());
    expect(out).toEqual(heapOut);
    expect(canonicalJobSnapshot(second.snapshot())).toEqual(canonicalJobSnapshot(heap.snapshot()));
    expect(readdirSync(path.join(root, "shared"))).toHaveLength(2);
    s2.close();
  });

  it("restores a heap checkpoint (every entry in the snapshot) and goes on as the heap backend does", () => {
    const root = scratch();
    const heap = LocalJob.create(doc);
    const heapOut = feed(heap, 0, 3000);
    heap.endOfInput("src");
    heapOut.push(...heap.drain());

    const first = LocalJob.create(doc);
    const out = feed(first, 0, 1200);
    const s = store(root, "from-heap", 64);
    const second = LocalJob.restore(doc, first.snapshot(), { stateBackend: (id) => s.backendFor(id) });
    out.push(...feed(second, 1200, 3000));
    second.endOfInput("src");
    out.push(...second.drain());
    expect(out).toEqual(heapOut);
    expect(canonicalJobSnapshot(second.snapshot())).toEqual(canonicalJobSnapshot(heap.snapshot()));
    s.close();
  });
});
