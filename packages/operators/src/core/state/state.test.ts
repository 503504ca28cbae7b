import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { OperatorTestHarness } from "../../testing";
import { listState, mapState, valueState, type JsonObject, type JsonValue, type ListState, type MapState, type StateTtlConfig, type ValueState } from "../api";
import { defineOperator } from "../spec";
import { HeapKeyedStateBackend, tablesFromSnapshot } from "./backend";

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

  it("keeps each table's snapshot order between snapshots: after any puts and deletes it equals a fresh backend's", () => {
    // The order is updated from the keys added and deleted since the last snapshot (SnapshotOrder);
    // a backend filled with the same final state from scratch sorts every key: both must agree.
    const op = fc.oneof(
      fc.record({ t: fc.constant("put" as const), table: fc.constantFrom("a", "b"), key: fc.integer({ min: 0, max: 12 }), v: fc.integer() }),
      fc.record({ t: fc.constant("delete" as const), table: fc.constantFrom("a", "b"), key: fc.integer({ min: 0, max: 12 }) }),
      fc.record({ t: fc.constant("snapshot" as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300, size: "max" }), fc.constantFrom(4, 128), (ops, maxP) => {
        const be = new HeapKeyedStateBackend();
        const model = { a: new Map<string, number>(), b: new Map<string, number>() };
        for (const name of ["a", "b"] as const) be.table<number>(name, "value");
        const check = () => {
          const fresh = new HeapKeyedStateBackend();
          for (const name of ["a", "b"] as const) fresh.table<number>(name, "value");
          for (const name of ["a", "b"] as const) for (const [k, v] of [...model[name]].reverse()) fresh.table<number>(name, "value").put(k, v);
          expect(JSON.stringify(be.snapshot(maxP))).toBe(JSON.stringify(fresh.snapshot(maxP)));
        };
        for (const o of ops) {
          if (o.t === "snapshot") check();
          else if (o.t === "put") {
            be.table<number>(o.table, "value").put(`k${o.key}`, o.v);
            model[o.table].set(`k${o.key}`, o.v);
          } else {
            be.table<number>(o.table, "value").delete(`k${o.key}`);
            model[o.table].delete(`k${o.key}`);
          }
        }
        check();
      }),
      { numRuns: 200 },
    );
    // More writes between two snapshots than the table has keys (+1024): the kept columns are dropped and rebuilt.
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

  it("snapshots in columns, listing keys once for tables over the same keys, and reads the older pairs form back alike", () => {
    const be = new HeapKeyedStateBackend();
    for (const k of ["x", "y", "z"]) {
      be.table<number>("count", "value").put(k, k.charCodeAt(0));
      be.table<Map<string, number>>("m", "map").put(k, new Map([["p", 1], ["q", 2]]));
    }
    be.table<number>("other", "value").put("x", 7);
    const columns = be.snapshotColumns(128);
    expect(columns.map((t) => [t.name, t.keys === null ? null : t.keys.length])).toEqual([
      ["count", 3],
      ["m", null],
      ["other", 1],
    ]);
    expect(columns[1]?.values[0]).toEqual(["p", 1, "q", 2]);
    const pairs = tablesFromSnapshot(columns);
    expect(pairs).toEqual(be.snapshot(128));
    expect(pairs[1]?.entries[0]?.[1]).toEqual([["p", 1], ["q", 2]]);
    // A snapshot written in the pairs form (before the columnar one) restores as it did.
    const restored = new HeapKeyedStateBackend();
    restored.restore(tablesFromSnapshot(pairs));
    expect(JSON.stringify(restored.snapshotColumns(128))).toBe(JSON.stringify(columns));
    expect(() => tablesFromSnapshot([{ name: "t", kind: "value", keys: ["a"], values: [1, 2] }])).toThrow(/state "t": the snapshot lists 1 keys for 2 values/);
  });

  it("refuses one state name with two kinds", () => {
    const be = new HeapKeyedStateBackend();
    be.table("s", "value");
    expect(() => be.table("s", "list")).toThrow(/state "s" is declared as list state but already exists as value state/);
  });
});
