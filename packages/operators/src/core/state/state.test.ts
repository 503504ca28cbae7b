import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { OperatorTestHarness } from "../../testing";
import { listState, mapState, valueState, type JsonObject, type JsonValue, type ListState, type MapState, type StateTtlConfig, type ValueState } from "../api";
import { defineOperator } from "../spec";
import { packValue, packValues, unpackValues } from "../snapshot-codec";
import { HeapKeyedStateBackend, SnapshotHold, tablesFromSnapshot, type ColumnarTableSnapshot, type PackedTableSnapshot } from "./backend";

/** A heap table's values in a snapshot, its key groups' chunks joined (tables not adopted by their operator are packed). */
function packedOf(t: ColumnarTableSnapshot | PackedTableSnapshot | undefined): Uint8Array {
  if (t === undefined || !("packed" in t)) throw new Error("expected a packed column");
  return Buffer.concat(t.packed);
}

/** A packed table's key bytes (empty when it lists none). */
function packedKeysOf(t: ColumnarTableSnapshot | PackedTableSnapshot | undefined): Uint8Array {
  if (t === undefined || !("packed" in t)) throw new Error("expected a packed column");
  return Buffer.concat(t.packedKeys ?? []);
}

/** A packed table's keys (null: those of the table before). */
function keysOf(t: ColumnarTableSnapshot | PackedTableSnapshot): unknown[] | null {
  if (!("packed" in t)) return t.keys;
  return t.packedKeys === null ? null : t.packedKeys.flatMap((c) => unpackValues(c));
}

/**
 * A scriptable operator: each record is a command on the key's state ({ cmd, v?, mk? }); reads are
 * emitted as { got }. Lets the tests drive the handles through the real host.
 */
const scripted = defineOperator({
  type: "test.state",
  version: 1,
  category: "custom",
  title: "state script",
  summary: "",
  docs: "",
  params: z.object({ ttlMs: z.number().optional(), updateType: z.enum(["onCreateAndWrite", "onReadAndWrite"]).optional() }),
  inputs: [{ id: "in", label: "in", accepts: ["keyed"] }],
  outputs: [{ id: "out", label: "out", kind: "keyed" }],
  requiresKeyedInput: true,
  stateful: true,
  create(p) {
    const ttl: StateTtlConfig | undefined = p.ttlMs === undefined ? undefined : { ttlMs: p.ttlMs, ...(p.updateType ? { updateType: p.updateType } : {}) };
    let v!: ValueState<JsonValue>;
    let l!: ListState<JsonValue>;
    let m!: MapState<JsonValue>;
    return {
      open(ctx) {
        v = ctx.getValueState(valueState<JsonValue>("v", ttl));
        l = ctx.getListState(listState<JsonValue>("l", ttl));
        m = ctx.getMapState(mapState<JsonValue>("m", ttl));
      },
      processElement(rec, ctx) {
        const { cmd, x, mk } = rec.value as { cmd: string; x?: JsonValue; mk?: string };
        const got = (g: JsonValue | undefined): void => ctx.output({ got: g === undefined ? "undefined" : g });
        switch (cmd) {
          case "set":
            return v.update(x ?? null);
          case "get":
            return got(v.value());
          case "clear":
            return v.clear();
          case "reinsert": {
            // read, clear, write the same object back: must be stored again
            const o = v.value();
            v.clear();
            if (o !== undefined) v.update(o);
            return;
          }
          case "add":
            return l.add(x ?? null);
          case "list":
            return got([...l.get()]);
          case "put":
            return m.put(mk ?? "", x ?? null);
          case "mget":
            return got(m.get(mk ?? ""));
          case "entries":
            return got(Object.fromEntries(m.entries()));
          case "empty":
            return got(m.isEmpty());
        }
      },
    };
  },
});

const cmd = (c: string, extra: JsonObject = {}): JsonObject => ({ cmd: c, ...extra });
const gets = (h: OperatorTestHarness): JsonValue[] => h.takeOutput().map((o) => o.value.got as JsonValue);

describe("keyed state handles", () => {
  it("are scoped to the current key", () => {
    const h = OperatorTestHarness.forSpec(scripted, {}, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 0, "a");
    h.processElement(cmd("set", { x: 2 }), 0, "b");
    h.processElement(cmd("add", { x: "p" }), 0, "a");
    h.processElement(cmd("put", { mk: "k", x: true }), 0, "b");
    h.processElement(cmd("get"), 0, "a").processElement(cmd("get"), 0, "b").processElement(cmd("get"), 0, "c");
    h.processElement(cmd("list"), 0, "a").processElement(cmd("list"), 0, "b");
    h.processElement(cmd("mget", { mk: "k" }), 0, "a").processElement(cmd("mget", { mk: "k" }), 0, "b");
    expect(gets(h)).toEqual([1, 2, "undefined", ["p"], [], "undefined", true]);
    expect(h.stateStats()).toMatchObject({ keys: 2, stateEntries: 4 });
  });

  it("store an object written back after a clear (the by-reference write skip is safe)", () => {
    const h = OperatorTestHarness.forSpec(scripted, {}, { keyed: true });
    h.processElement(cmd("set", { x: { n: 1 } }), 0, "a").processElement(cmd("reinsert"), 0, "a").processElement(cmd("get"), 0, "a");
    expect(gets(h)).toEqual([{ n: 1 }]);
  });

  it("free a key when its last entry goes (clear, empty map)", () => {
    const h = OperatorTestHarness.forSpec(scripted, {}, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 0, "a").processElement(cmd("clear"), 0, "a");
    expect(h.stateStats().keys).toBe(0);
  });

  it("refuse state access outside a keyed context, naming the node", () => {
    const h = OperatorTestHarness.forSpec(scripted, {}, { nodeId: "script" });
    expect(() => h.host.processElement({ value: cmd("get"), timestamp: 0 }, "other")).toThrow(/node "script": keyed state "v" used outside a keyed context/);
  });
});

describe("state TTL (event time: stamp = max(record time, watermark); expired once stamp + ttl <= watermark)", () => {
  it("never returns an expired value (lazy expiry on read)", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processElement(cmd("set", { x: "v" }), 1_000, "a");
    h.processWatermark(1_099);
    h.processElement(cmd("get"), 1_099, "a");
    h.processWatermark(1_100);
    h.processElement(cmd("get"), 1_100, "a");
    expect(gets(h)).toEqual(["v", "undefined"]);
  });

  it("onCreateAndWrite: reads do not extend the TTL; writes do", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 1_000, "a");
    h.processWatermark(1_050).processElement(cmd("get"), 1_050, "a");
    h.processWatermark(1_100).processElement(cmd("get"), 1_100, "a");
    h.processElement(cmd("set", { x: 2 }), 1_150, "a");
    h.processWatermark(1_249).processElement(cmd("get"), 1_249, "a");
    expect(gets(h)).toEqual([1, "undefined", 2]);
  });

  it("onReadAndWrite: reads extend the TTL", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100, updateType: "onReadAndWrite" }, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 1_000, "a");
    h.processWatermark(1_050).processElement(cmd("get"), 1_080, "a");
    h.processWatermark(1_179).processElement(cmd("get"), 1_179, "a");
    h.processWatermark(1_279).processElement(cmd("get"), 1_279, "a");
    expect(gets(h)).toEqual([1, 1, "undefined"]);
  });

  it("a late record's write is stamped at the watermark, so it does not start out expired", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processWatermark(5_000);
    h.processElement(cmd("set", { x: "late" }), 10, "a");
    h.processElement(cmd("get"), 5_000, "a");
    h.processWatermark(5_100).processElement(cmd("get"), 5_100, "a");
    expect(gets(h)).toEqual(["late", "undefined"]);
  });

  it("expires list elements and map entries one by one, as Flink does", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processElement(cmd("add", { x: "old" }), 1_000, "a").processElement(cmd("put", { mk: "old", x: 1 }), 1_000, "a");
    h.processElement(cmd("add", { x: "new" }), 1_060, "a").processElement(cmd("put", { mk: "new", x: 2 }), 1_060, "a");
    h.processWatermark(1_100);
    h.processElement(cmd("list"), 1_100, "a").processElement(cmd("entries"), 1_100, "a").processElement(cmd("mget", { mk: "old" }), 1_100, "a");
    h.processWatermark(1_160).processElement(cmd("list"), 1_160, "a").processElement(cmd("empty"), 1_160, "a");
    expect(gets(h)).toEqual([["new"], { new: 2 }, "undefined", [], true]);
  });

  it("cleans up actively: keys never seen again free their memory as the watermark passes", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    for (let i = 0; i < 50; i++) h.processElement(cmd("set", { x: i }), 1_000 + i, `k${i}`);
    for (let i = 0; i < 50; i++) h.processElement(cmd("put", { mk: "m", x: i }), 1_000 + i, `k${i}`);
    expect(h.stateStats().keys).toBe(50);
    h.processWatermark(1_124); // keys k0..k24 expired (stamp + 100 <= 1124)
    expect(h.stateStats()).toMatchObject({ keys: 25, stateEntries: 50 });
    h.processWatermark(Number.POSITIVE_INFINITY);
    expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0 });
  });

  it("bounds state: under a stream of unique keys, live keys <= keys seen within the TTL", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 300 }), fc.integer({ min: 1, max: 200 }), (gaps, ttlMs) => {
        const h = OperatorTestHarness.forSpec(scripted, { ttlMs }, { keyed: true });
        let t = 0;
        const seen: number[] = [];
        gaps.forEach((g, i) => {
          t += g;
          h.processElement(cmd("set", { x: i }), t, `u${i}`);
          seen.push(t);
          h.processWatermark(t - 1);
          const wm = t - 1;
          const live = seen.filter((s) => s + ttlMs > wm).length;
          expect(h.stateStats().keys).toBeLessThanOrEqual(live);
        });
      }),
    );
  });

  it("survives snapshot and restore, stamps included, and keeps cleaning up after it", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 1_000, "a").processElement(cmd("set", { x: 2 }), 1_050, "b");
    const r = OperatorTestHarness.restore(scripted, { ttlMs: 100 }, h.snapshot(), { keyed: true });
    r.processWatermark(1_100);
    expect(r.stateStats().keys).toBe(1);
    r.processElement(cmd("get"), 1_100, "a").processElement(cmd("get"), 1_100, "b");
    expect(gets(r)).toEqual(["undefined", 2]);
  });
});

/**
 * Counts timer firings per key in TTL'd value state: each record registers event-time timers at
 * `at` (ms); each firing increments the count and emits it. The end-of-input probe.
 */
const timerCounter = defineOperator({
  type: "test.timerCounter",
  version: 1,
  category: "custom",
  title: "timer counter",
  summary: "",
  docs: "",
  params: z.object({ ttlMs: z.number() }),
  inputs: [{ id: "in", label: "in", accepts: ["keyed"] }],
  outputs: [{ id: "out", label: "out", kind: "keyed" }],
  requiresKeyedInput: true,
  stateful: true,
  create(p) {
    let n!: ValueState<number>;
    let seen!: MapState<number>;
    return {
      open(ctx) {
        n = ctx.getValueState(valueState<number>("n", { ttlMs: p.ttlMs }));
        seen = ctx.getMapState(mapState<number>("seen", { ttlMs: p.ttlMs }));
      },
      processElement(rec, ctx) {
        for (const t of (rec.value as { at: number[] }).at) ctx.timerService.registerEventTimeTimer(t);
      },
      onTimer(timer, ctx) {
        const c = (n.value() ?? 0) + 1;
        n.update(c);
        seen.put(String(timer.time), c);
        ctx.output({ time: timer.time, count: c, seen: [...seen.keys()].length });
      },
    };
  },
});

describe("state TTL while timers fire (the TTL clock is the firing timer's time, not the new watermark)", () => {
  it("at end of input (+∞), a value written by one timer is visible to the next (regression: counts were 1, 1)", () => {
    const h = OperatorTestHarness.forSpec(timerCounter, { ttlMs: 100 }, { keyed: true });
    h.processElement({ at: [1_000, 1_050] }, 900, "a");
    h.endOfInput();
    expect(h.takeOutput().map((o) => o.value)).toEqual([
      { time: 1_000, count: 1, seen: 1 },
      { time: 1_050, count: 2, seen: 2 },
    ]);
    // After end of input, active cleanup at +∞ still frees everything.
    expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0, timers: 0 });
  });

  it("still expires between timers of one advance by their own times, and a jump of the watermark does not expire state a timer is about to read", () => {
    const h = OperatorTestHarness.forSpec(timerCounter, { ttlMs: 100 }, { keyed: true });
    h.processElement({ at: [1_000, 1_099, 1_300] }, 1_000, "a");
    h.processWatermark(10_000); // one advance far past every stamp + ttl
    // 1_000 → 1; 1_099: stamp 1_000 + 100 > 1_099, live → 2; 1_300: stamp 1_099 + 100 <= 1_300, expired → 1.
    expect(h.takeOutput().map((o) => o.value.count)).toEqual([1, 2, 1]);
    expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0 });
  });

  it("a write stamped earlier (an out-of-order record) does not shorten an entry's life", () => {
    const h = OperatorTestHarness.forSpec(scripted, { ttlMs: 100 }, { keyed: true });
    h.processElement(cmd("set", { x: 1 }), 2_000, "a");
    h.processElement(cmd("set", { x: 2 }), 1_000, "a"); // on time (watermark −∞), stamped 1_000 < 2_000
    h.processElement(cmd("put", { mk: "m", x: 1 }), 2_000, "a").processElement(cmd("put", { mk: "m", x: 2 }), 1_000, "a");
    h.processWatermark(1_500).processElement(cmd("get"), 1_501, "a").processElement(cmd("mget", { mk: "m" }), 1_501, "a");
    h.processWatermark(2_100).processElement(cmd("get"), 2_101, "a");
    expect(gets(h)).toEqual([2, 2, "undefined"]);
  });
});

describe("HeapKeyedStateBackend", () => {
  it("snapshots deterministically, whatever the insertion order, and restores a key-group subset", () => {
    const a = new HeapKeyedStateBackend();
    const b = new HeapKeyedStateBackend();
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`);
    for (const k of keys) a.table<number>("t", "value").put(k, k.length);
    for (const k of [...keys].reverse()) b.table<number>("t", "value").put(k, k.length);
    b.table<Map<string, number>>("m", "map").put("x", new Map([["1", 1]]));
    a.table<Map<string, number>>("m", "map").put("x", new Map([["1", 1]]));
    expect(JSON.stringify(a.snapshot())).toBe(JSON.stringify(b.snapshot()));
    const c = new HeapKeyedStateBackend();
    c.restore(a.snapshot(), (k) => k.endsWith("1"));
    expect([...c.table("t", "value").keys()].sort()).toEqual(["key-1", "key-11", "key-21", "key-31"]);
    expect(c.table<Map<string, number>>("m", "map").get("x")).toBeUndefined();
  });

  it("keeps each table's packed columns between snapshots: after any puts, deletes, in-place changes and materializations they are a fresh backend's bytes", () => {
    // The columns are updated from the keys written, deleted or changed in place since the last
    // snapshot or materialization (SnapshotColumns); a backend filled with the same final state from
    // scratch packs every value: both must give the same keys and bytes. Snapshots taken with a
    // hold (what a checkpoint being written keeps) must not change until it is released, while
    // the buffers of released ones are written again.
    const op = fc.oneof(
      fc.record({ t: fc.constant("put" as const), table: fc.constantFrom("a", "b"), key: fc.integer({ min: 0, max: 40 }), v: fc.integer() }),
      fc.record({ t: fc.constant("mutate" as const), table: fc.constantFrom("a", "b"), key: fc.integer({ min: 0, max: 40 }), v: fc.integer() }),
      fc.record({ t: fc.constant("delete" as const), table: fc.constantFrom("a", "b"), key: fc.integer({ min: 0, max: 40 }) }),
      fc.record({ t: fc.constant("snapshot" as const) }),
      fc.record({ t: fc.constant("materialize" as const), slice: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }), finish: fc.boolean() }),
      fc.record({ t: fc.constant("hold" as const) }),
      fc.record({ t: fc.constant("release" as const), which: fc.nat() }),
    );
    type Stored = { n: number; tag: string };
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300, size: "max" }), fc.constantFrom(4, 128), (ops, maxP) => {
        const be = new HeapKeyedStateBackend();
        const model = { a: new Map<string, number>(), b: new Map<string, number>() };
        const tables = { a: be.table<Stored>("a", "value"), b: be.table<Map<string, Stored>>("b", "map") };
        // Held snapshots not yet released: their packed arrays, and a copy of their bytes when taken.
        const held: Array<{ hold: SnapshotHold; arrays: Uint8Array[]; copies: Buffer[] }> = [];
        const checkHeld = () => {
          for (const h of held) h.arrays.forEach((a, i) => expect(Buffer.from(a).equals(h.copies[i] as Buffer)).toBe(true));
        };
        const check = () => {
          checkHeld();
          const fresh = new HeapKeyedStateBackend();
          const fa = fresh.table<Stored>("a", "value");
          const fb = fresh.table<Map<string, Stored>>("b", "map");
          for (const [k, v] of [...model.a].reverse()) fa.put(k, { n: v, tag: `t${v % 7}` });
          for (const [k, v] of [...model.b].reverse()) fb.put(k, new Map([["m", { n: v, tag: `t${v % 7}` }]]));
          const got = be.snapshotColumns(maxP);
          const want = fresh.snapshotColumns(maxP);
          expect(got.map((t) => [t.name, keysOf(t)])).toEqual(want.map((t) => [t.name, keysOf(t)]));
          got.forEach((t, i) => expect(Buffer.from(packedOf(t)).equals(Buffer.from(packedOf(want[i])))).toBe(true));
          got.forEach((t, i) => expect(Buffer.from(packedKeysOf(t)).equals(Buffer.from(packedKeysOf(want[i])))).toBe(true));
        };
        for (const o of ops) {
          if (o.t === "snapshot") {
            check();
            continue;
          }
          if (o.t === "hold") {
            const hold = new SnapshotHold();
            const arrays = be.snapshotColumns(maxP, hold).flatMap((t) => ("packed" in t ? t.packed : []));
            held.push({ hold, arrays, copies: arrays.map((a) => Buffer.from(a)) });
            continue;
          }
          if (o.t === "release") {
            if (held.length > 0) held.splice(o.which % held.length, 1)[0]?.hold.release();
            continue;
          }
          if (o.t === "materialize") {
            if (o.slice === undefined) {
              expect(be.materialize(maxP)).toBe(true);
              continue;
            }
            // One slice: it stops early only with its budget spent; slices after it (or the next
            // snapshot) finish the work.
            const budget = { values: o.slice };
            if (!be.materialize(maxP, budget)) expect(budget.values).toBeLessThanOrEqual(0);
            let slices = 0;
            while (o.finish && !be.materialize(maxP, { values: 3 })) expect(++slices).toBeLessThan(100);
            continue;
          }
          // Some keys past a fixstr's 31 bytes (str8) and a str8's 255 (str16): a group's packed keys are spliced by their headers.
          const k = o.key % 5 === 0 ? `${"long-".repeat(60)}${o.key}` : o.key % 3 === 0 ? `${"key-".repeat(9)}${o.key}` : `k${o.key}`;
          if (o.t === "delete") {
            tables[o.table].delete(k);
            model[o.table].delete(k);
          } else if (o.t === "put" || !model[o.table].has(k)) {
            const v = o.v;
            if (o.table === "a") tables.a.put(k, { n: v, tag: `t${v % 7}` });
            else tables.b.put(k, new Map([["m", { n: v, tag: `t${v % 7}` }]]));
            model[o.table].set(k, v);
          } else {
            // The by-reference handles' pattern: the stored object changed in place, then reported.
            const stored = o.table === "a" ? tables.a.get(k) : tables.b.get(k)?.get("m");
            Object.assign(stored as Stored, { n: o.v, tag: `t${o.v % 7}` });
            tables[o.table].changedInPlace?.(k);
            model[o.table].set(k, o.v);
          }
        }
        check();
      }),
      { numRuns: 200 },
    );
    // More writes between two snapshots than twice the table's keys (+1024): the kept columns are dropped and rebuilt.
    const be = new HeapKeyedStateBackend();
    const t = be.table<number>("a", "value");
    for (let i = 0; i < 10; i++) t.put(`k${i}`, i);
    be.snapshot();
    for (let i = 0; i < 3000; i++) t.put(`k${(i * 7) % 13}`, i);
    t.delete("k3");
    const fresh = new HeapKeyedStateBackend();
    for (const [k, v] of [...t.entries()].reverse()) fresh.table<number>("a", "value").put(k, v);
    expect(be.snapshot()).toEqual(fresh.snapshot());
  });

  it("writes a key group's changes into the buffer of a released snapshot, and never into one still held", () => {
    const be = new HeapKeyedStateBackend();
    const t = be.table<number>("a", "value");
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i);
    const groupBuffers = (hold?: SnapshotHold) => be.snapshotColumns(128, hold).flatMap((c) => ("packed" in c ? c.packed.map((p) => p.buffer) : []));
    const first = new SnapshotHold();
    const firstBuffers = groupBuffers(first);
    first.release();
    // Every group changes twice, each time after the last snapshot was released: the second write goes into the first's buffers.
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i + 100);
    const second = new SnapshotHold();
    expect(groupBuffers(second).some((b, i) => b === firstBuffers[i])).toBe(false);
    second.release();
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i + 200);
    const third = new SnapshotHold();
    expect(groupBuffers(third)).toEqual(firstBuffers);
    // Held: its buffers are not written again; the next ones are new allocations.
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i + 300);
    const fourth = groupBuffers(new SnapshotHold());
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i + 400);
    const fifth = groupBuffers();
    expect(fifth.some((b) => firstBuffers.includes(b) || fourth.includes(b))).toBe(false);
    // Without a hold (snapshot() and every other caller), a snapshot's buffers are kept for good.
    for (let i = 0; i < 50; i++) t.put(`k${i}`, i + 500);
    expect(groupBuffers().some((b) => fifth.includes(b))).toBe(false);
    const fresh = new HeapKeyedStateBackend();
    for (let i = 0; i < 50; i++) fresh.table<number>("a", "value").put(`k${i}`, i + 500);
    expect(be.snapshot()).toEqual(fresh.snapshot());
  });

  it("packs a long backlog in small slices, put in key-group order while writes go on between them, to a fresh backend's bytes", () => {
    // Many more keys reported than a slice takes: the backlog is bucketed by key group (regroup),
    // more keys are reported while the slices run, some of them twice, some deleted.
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 599 }), fc.integer({ min: -1, max: 1000 })), { minLength: 50, maxLength: 400 }),
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 1, max: 40 }),
        (writes, slice, writesPerSlice) => {
          const be = new HeapKeyedStateBackend();
          const t = be.table<{ v: number }>("a", "value");
          const model = new Map<string, number>();
          const write = ([k, v]: [number, number]) => {
            if (v < 0) {
              t.delete(`k${k}`);
              model.delete(`k${k}`);
            } else {
              t.put(`k${k}`, { v });
              model.set(`k${k}`, v);
            }
          };
          for (let i = 0; i < 300; i++) write([i * 2, i]);
          be.snapshotColumns(128);
          for (let i = 0; i < 300; i++) write([(i * 7) % 600, i + 1]);
          let w = 0;
          while (!be.materialize(128, { values: slice }) || w < writes.length) for (const end = w + writesPerSlice; w < end && w < writes.length; w++) write(writes[w]!);
          const fresh = new HeapKeyedStateBackend();
          for (const [k, v] of [...model].reverse()) fresh.table<{ v: number }>("a", "value").put(k, { v });
          const got = be.snapshotColumns(128);
          const want = fresh.snapshotColumns(128);
          expect(got.map(keysOf)).toEqual(want.map(keysOf));
          expect(Buffer.from(packedOf(got[0])).equals(Buffer.from(packedOf(want[0])))).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("with verification on (the unit tests), a stored object changed in place behind its back fails the snapshot, naming the state and key", () => {
    const be = new HeapKeyedStateBackend();
    const t = be.table<{ n: number }>("acc", "value");
    t.put("card-1", { n: 1 });
    t.put("card-2", { n: 2 });
    const held = t.get("card-2") as { n: number };
    be.snapshotColumns(128);
    // A read counts as a change (the reader may change the object in place)...
    (t.get("card-1") as { n: number }).n = 5;
    (t.get("card-1") as { n: number }).n = 1;
    expect(be.snapshotColumns(128)).toHaveLength(1);
    // ...but a reference kept across a snapshot is behind the table's back.
    held.n = 3;
    expect(() => be.snapshotColumns(128)).toThrow(/state "acc": the kept snapshot columns differ from the state at key "card-2"/);
    t.changedInPlace?.("card-2");
    const [acc] = be.snapshotColumns(128);
    expect(tablesFromSnapshot([acc!])[0]?.entries.sort()).toEqual([
      ["card-1", { n: 1 }],
      ["card-2", { n: 3 }],
    ]);
  });

  it("packs a column as its values packed one by one, and reads it back", () => {
    // msgpackr's reader renames an object key "__proto__" to "__proto_" (its guard against prototype
    // pollution) in every snapshot form, so such a key would not survive a restore: sources refuse
    // records that have one (runtime/job.ts), and it is left out here.
    const field = fc.string().filter((k) => k !== "__proto__");
    const value = fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.string(), fc.constant(null), fc.boolean(), fc.array(fc.integer()), fc.dictionary(field, fc.integer()));
    fc.assert(
      fc.property(fc.array(value, { maxLength: 70 }), (values) => {
        const one = Buffer.concat(values.map((v) => Buffer.from(packValue(v))));
        const packed = packValues(values);
        expect(Buffer.from(packed).equals(one)).toBe(true);
        expect(unpackValues(packed)).toEqual(values.map((v) => (Object.is(v, -0) ? 0 : v)));
      }),
    );
  });

  it("snapshots in columns, listing keys once for tables over the same keys, and reads the older pairs form back alike", () => {
    const be = new HeapKeyedStateBackend();
    for (const k of ["x", "y", "z"]) {
      be.table<number>("count", "value").put(k, k.charCodeAt(0));
      be.table<Map<string, number>>("m", "map").put(k, new Map([["p", 1], ["q", 2]]));
    }
    be.table<number>("other", "value").put("x", 7);
    const columns = be.snapshotColumns(128);
    expect(columns.map((t) => [t.name, keysOf(t)?.length ?? null])).toEqual([
      ["count", 3],
      ["m", null],
      ["other", 1],
    ]);
    expect(unpackValues(packedOf(columns[1]))[0]).toEqual(["p", 1, "q", 2]);
    const pairs = tablesFromSnapshot(columns);
    expect(pairs).toEqual(be.snapshot(128));
    expect(pairs[1]?.entries[0]?.[1]).toEqual([["p", 1], ["q", 2]]);
    // The columnar form with its values not packed (adopted tables, and snapshots before the packed form) reads back alike.
    expect(tablesFromSnapshot(columns.map((t) => ({ name: t.name, kind: t.kind, keys: keysOf(t) as string[] | null, values: unpackValues(packedOf(t)) })))).toEqual(pairs);
    // A snapshot written in the pairs form (before the columnar one) restores as it did.
    const restored = new HeapKeyedStateBackend();
    restored.restore(tablesFromSnapshot(pairs));
    const again = restored.snapshotColumns(128);
    expect(again.map((t) => [t.name, t.kind, keysOf(t)])).toEqual(columns.map((t) => [t.name, t.kind, keysOf(t)]));
    again.forEach((t, i) => expect(Buffer.from(packedOf(t)).equals(Buffer.from(packedOf(columns[i])))).toBe(true));
    expect(() => tablesFromSnapshot([{ name: "t", kind: "value", keys: ["a"], values: [1, 2] }])).toThrow(/state "t": the snapshot lists 1 keys for 2 values/);
  });

  it("counts each key once across tables, and each map entry, in its statistics", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("v", "l", "m"), fc.nat({ max: 30 }), fc.nat({ max: 3 })), { maxLength: 80 }), (puts) => {
        const be = new HeapKeyedStateBackend();
        const tables = { v: be.table("v", "value"), l: be.table("l", "list"), m: be.table<Map<string, number>>("m", "map") };
        const model = new Map<string, Set<string>>();
        for (const [name, k, mk] of puts) {
          const key = `k${k}`;
          if (name === "m") {
            const map = tables.m.get(key) ?? new Map<string, number>();
            map.set(`e${mk}`, mk);
            tables.m.put(key, map);
          } else tables[name].put(key, name === "l" ? [mk] : mk);
          const entries = model.get(`${name}/${key}`) ?? new Set<string>();
          entries.add(name === "m" ? `e${mk}` : "");
          model.set(`${name}/${key}`, entries);
        }
        const stats = be.stats();
        expect(stats.keys).toBe(new Set([...model.keys()].map((k) => k.split("/")[1])).size);
        expect(stats.stateEntries).toBe([...model.values()].reduce((n, e) => n + e.size, 0));
      }),
    );
  });

  it("refuses one state name with two kinds", () => {
    const be = new HeapKeyedStateBackend();
    be.table("s", "value");
    expect(() => be.table("s", "list")).toThrow(/state "s" is declared as list state but already exists as value state/);
  });
});
