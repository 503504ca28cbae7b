// Unit tests of the window operators: the rules the property tests do not pin down by example.
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import { HeapKeyedStateBackend } from "../../core/state";
import { OperatorTestHarness, type HarnessOutput } from "../../testing";
import { SliceAssigner } from "./assigners";
import { SlicedWindowOperator } from "./sliced-window";
import { windowHoppingParams, windowHoppingSpec } from "./window.hopping";
import { windowSessionSpec } from "./window.session";
import { windowTumblingParams, windowTumblingSpec } from "./window.tumbling";

const results = (out: HarnessOutput[]): JsonObject[] => out.filter((o) => o.port === "out").map((o) => o.value);
const count = { op: "count" } as const;

describe("window.tumbling", () => {
  it("windows are [start, end) aligned to the epoch, and fire when the watermark reaches end − 1", () => {
    const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: count }, { keyed: true });
    h.processElement({}, 0, "k").processElement({}, 9, "k").processElement({}, 10, "k");
    h.processWatermark(8);
    expect(h.takeOutput()).toEqual([]);
    h.processWatermark(9);
    expect(h.takeOutput()).toEqual([{ port: "out", value: { key: "k", windowStart: 0, windowEnd: 10, value: 2 }, timestamp: 9, key: "k" }]);
    h.endOfInput();
    expect(results(h.takeOutput())).toEqual([{ key: "k", windowStart: 10, windowEnd: 20, value: 1 }]);
  });

  it("aligns negative timestamps too", () => {
    const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: count }, { keyed: true });
    h.processElement({}, -1, "k").processElement({}, -10, "k").processElement({}, -11, "k").endOfInput();
    expect(results(h.output())).toEqual([
      { key: "k", windowStart: -20, windowEnd: -10, value: 1 },
      { key: "k", windowStart: -10, windowEnd: 0, value: 2 },
    ]);
  });

  it("a record is late once its window's end − 1 + allowedLateness <= watermark (boundary both sides)", () => {
    const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: count, allowedLatenessMs: 5 }, { keyed: true });
    h.processElement({ n: 1 }, 3, "k");
    h.processWatermark(13); // fired at 9; cleanup at 9 + 5 = 14
    h.takeOutput();
    h.processElement({ n: 2 }, 4, "k"); // 14 > 13: allowed, fires again with the update
    expect(h.takeOutput()).toEqual([{ port: "out", value: { key: "k", windowStart: 0, windowEnd: 10, value: 2 }, timestamp: 9, key: "k" }]);
    h.processWatermark(14); // purged
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
    h.processElement({ n: 3 }, 5, "k");
    expect(h.takeOutput()).toEqual([{ port: "late", value: { n: 3 }, timestamp: 5, key: "k" }]);
  });

  it("without allowed lateness a window is final when it fires", () => {
    const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: count }, { keyed: true });
    h.processElement({}, 3, "k").processWatermark(9).processElement({ late: true }, 9, "k").processElement({}, 10, "k");
    expect(h.takeOutput().map((o) => o.port)).toEqual(["out", "late"]);
  });

  it("computes each aggregate incrementally; non-numeric inputs go to errors naming the node and field", () => {
    const run = (aggregate: JsonObject, values: JsonObject[]) => {
      const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 100, aggregate: aggregate as never }, { keyed: true, nodeId: "w" });
      values.forEach((v, i) => h.processElement(v, i, "k"));
      h.endOfInput();
      return h.output().map((o) => (o.port === "out" ? o.value.value : o.value));
    };
    const vs = [{ a: 3 }, { a: "4.5" }, { a: -1 }, { a: 3 }];
    expect(run({ op: "count" }, vs)).toEqual([4]);
    expect(run({ op: "count", field: "b" }, [{ b: 1 }, { b: null }, {}])).toEqual([1]);
    expect(run({ op: "sum", field: "a" }, vs)).toEqual([9.5]);
    expect(run({ op: "min", field: "a" }, vs)).toEqual([-1]);
    expect(run({ op: "max", field: "a" }, vs)).toEqual([4.5]);
    expect(run({ op: "avg", field: "a" }, vs)).toEqual([2.375]);
    expect(run({ op: "distinctCount", field: "a" }, [...vs, { a: "3" }, { a: null }, { a: { x: 1 } }, { a: { x: 1 } }])).toEqual([5]);
    expect(run({ op: "sum", field: "a" }, [{ a: 1 }, { a: "lots" }, {}])).toEqual([
      { error: 'node "w": field "a" is "lots", not a number', record: { a: "lots" } },
      { error: 'node "w": field "a" is missing from the record', record: {} },
      1,
    ]);
  });

  it("keeps keys apart and emits windows firing together in key order", () => {
    const h = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: count }, { keyed: true });
    for (const k of ["c", "a", "b", "a"]) h.processElement({}, 1, k);
    h.endOfInput();
    expect(results(h.output()).map((v) => [v.key, v.value])).toEqual([
      ["a", 2],
      ["b", 1],
      ["c", 1],
    ]);
  });

  it("validates params: sizes are positive durations, and every op but count needs a field", () => {
    expect(windowTumblingParams.safeParse({ sizeMs: "1m", aggregate: { op: "count" } })).toMatchObject({ success: true, data: { sizeMs: 60_000, allowedLatenessMs: 0 } });
    const noField = windowTumblingParams.safeParse({ sizeMs: 10, aggregate: { op: "sum" } });
    expect(noField.success).toBe(false);
    expect(noField.error?.issues[0]).toMatchObject({ path: ["aggregate", "field"], message: expect.stringMatching(/"sum" needs a field/) });
    expect(windowTumblingParams.safeParse({ sizeMs: 0, aggregate: { op: "count" } }).success).toBe(false);
  });
});

describe("window.hopping", () => {
  it("emits every window a record falls in", () => {
    const h = OperatorTestHarness.forSpec(windowHoppingSpec, { sizeMs: 10, slideMs: 5, aggregate: count }, { keyed: true });
    h.processElement({}, 1, "k").processElement({}, 7, "k").endOfInput();
    expect(results(h.output()).map((v) => [v.windowStart, v.windowEnd, v.value])).toEqual([
      [-5, 5, 1],
      [0, 10, 2],
      [5, 15, 1],
    ]);
  });

  it("keeps one slice per non-empty gcd(size, slide) bucket and one timer per key, not size ÷ slide windows", () => {
    const hour = 3_600_000;
    const minute = 60_000;
    const h = OperatorTestHarness.forSpec(windowHoppingSpec, { sizeMs: hour, slideMs: minute, aggregate: count }, { keyed: true });
    for (let k = 0; k < 100; k++) h.processElement({}, 1_000, `sparse${k}`); // one record: one slice, 60 windows
    for (let m = 0; m < 30; m++) h.processElement({}, m * minute, "busy");
    const stats = h.stateStats();
    expect(stats).toMatchObject({ keys: 101, stateEntries: 101, timers: 101 });
    const state = (h.host as unknown as { backend: { table(n: string, k: string): { get(k: string): unknown[] } } }).backend.table("slices", "value");
    expect(state.get("sparse0")).toHaveLength(2 + 2); // header + one slice (start, count)
    expect(state.get("busy")).toHaveLength(2 + 30 * 2);
    h.processWatermark(hour);
    expect(results(h.takeOutput()).filter((v) => v.key === "sparse0")).toHaveLength(60 + 0); // windows ending at 1 min … 60 min
  });

  it("counts on the heap keep a list per slice of only the keys with records in it: sparse keys and far-future records cost their cells", () => {
    const hour = 3_600_000;
    const minute = 60_000;
    const h = OperatorTestHarness.forSpec(windowHoppingSpec, { sizeMs: hour, slideMs: minute, aggregate: count }, { keyed: true });
    // 60 000 keys, each seen once, spread over the hour: each slice's list holds 1 000 of them.
    for (let k = 0; k < 60_000; k++) h.processElement({}, (k % 60) * minute, `card${k}`);
    const sparse = h.stateStats();
    expect(sparse).toMatchObject({ keys: 60_000, stateEntries: 60_000, timers: 60_000 });
    // A column per slot and slice would be 60 slices x 60 000 keys x 8 B = 480 B per key.
    expect(sparse.stateBytes / sparse.keys).toBeLessThan(200);
    // A record a century ahead adds one cell (its gap in slices does not fit an int32 at 1 ms slices: see the next test).
    h.processElement({}, 100 * 365 * 24 * hour, "card0");
    expect(h.stateStats().stateBytes - sparse.stateBytes).toBeLessThan(1_000);
  });

  it("a key's cells years apart (a clock-skewed record) link exactly, on every storage and across a restore", () => {
    const params = { sizeMs: 8, slideMs: 1, aggregate: count, allowedLatenessMs: 4 };
    const far = 2 ** 33; // 2^33 slices of 1 ms ahead: past an int32 gap
    const feed = (h: OperatorTestHarness, from: number, to: number): void => {
      const records: Array<[number, string]> = [[0, "k"], [far, "k"], [far + 1, "j"], [3, "k"], [1, "k"], [far - 2, "k"], [2, "j"], [far, "k"]];
      for (const [ts, key] of records.slice(from, to)) h.processElement({ ts }, ts, key);
    };
    const heapMap = OperatorTestHarness.forSpec(windowHoppingSpec, params, { keyed: true, backend: () => Object.assign(new HeapKeyedStateBackend(), { adoptTable: undefined }) });
    feed(heapMap, 0, 8);
    heapMap.processWatermark(5).endOfInput();
    const heap = OperatorTestHarness.forSpec(windowHoppingSpec, params, { keyed: true });
    feed(heap, 0, 5);
    const restored = OperatorTestHarness.restore(windowHoppingSpec, params, heap.snapshot(), { keyed: true });
    feed(restored, 5, 8);
    restored.processWatermark(5).endOfInput();
    expect([...heap.output(), ...restored.output()]).toEqual(heapMap.output());
    expect(results(heapMap.output()).filter((v) => v.key === "k" && v.windowEnd === far + 8)).toEqual([{ key: "k", windowStart: far, windowEnd: far + 8, value: 2 }]);
  });

  it("uses slices of gcd(size, slide) when the slide does not divide the size", () => {
    const a = new SliceAssigner(10, 4); // slices of 2; windows [4k, 4k + 10)
    expect(a.step).toBe(2);
    expect(a.sliceStart(7)).toBe(6);
    expect(a.firstEnd(6)).toBe(10); // [0, 10) is the first window holding [6, 8)
    expect(a.lastEnd(6)).toBe(14); // [4, 14) the last
    expect(a.endAfter(6, 10)).toBe(14);
    expect(a.endAfter(6, 14)).toBeUndefined();
    const h = OperatorTestHarness.forSpec(windowHoppingSpec, { sizeMs: 10, slideMs: 4, aggregate: count }, { keyed: true });
    h.processElement({}, 7, "k").processElement({}, 9, "k").endOfInput();
    expect(results(h.output()).map((v) => [v.windowStart, v.value])).toEqual([
      [0, 2],
      [4, 2],
      [8, 1],
    ]);
  });

  it("re-emits every already-fired window that a late-but-allowed record updates", () => {
    const h = OperatorTestHarness.forSpec(windowHoppingSpec, { sizeMs: 10, slideMs: 5, aggregate: count, allowedLatenessMs: 10 }, { keyed: true });
    h.processElement({}, 6, "k").processWatermark(14);
    expect(results(h.takeOutput()).map((v) => v.windowEnd)).toEqual([10, 15]); // both fired (max timestamps 9 and 14)
    h.processElement({}, 7, "k"); // windows [0,10) (cleanup 19) and [5,15) (cleanup 24): both updated and re-emitted
    expect(results(h.takeOutput()).map((v) => [v.windowEnd, v.value])).toEqual([
      [10, 2],
      [15, 2],
    ]);
  });

  it("refuses a slide longer than the size (records in the gaps would be in no window), naming the param", () => {
    const r = windowHoppingParams.safeParse({ sizeMs: 10_000, slideMs: "1m", aggregate: count });
    expect(r.success).toBe(false);
    expect(r.error?.issues).toEqual([expect.objectContaining({ path: ["slideMs"], message: expect.stringMatching(/^must not be longer than sizeMs \(10s\).*gaps/) })]);
    expect(windowHoppingParams.safeParse({ sizeMs: 10, slideMs: 10, aggregate: count }).success).toBe(true);
    // Behind the schema, the operator itself refuses such windows rather than drop gap records.
    expect(() => new SlicedWindowOperator("h", 10, 20, count, 0)).toThrow(/node "h": slideMs \(20\) must not exceed sizeMs \(10\)/);
  });

  it("warns about tiny gcd slices", () => {
    const check = windowHoppingSpec.check as NonNullable<typeof windowHoppingSpec.check>;
    const p = (sizeMs: number, slideMs: number) => windowHoppingParams.parse({ sizeMs, slideMs, aggregate: count });
    expect(check(p(3_600_001, 60_000), { nodeId: "h" })[0]).toMatchObject({ severity: "warning", message: expect.stringMatching(/slices of state/) });
    expect(check(p(3_600_000, 60_000), { nodeId: "h" })).toEqual([]);
  });
});

describe("window.session", () => {
  const session = (gapMs: number, allowedLatenessMs = 0) => OperatorTestHarness.forSpec(windowSessionSpec, { gapMs, aggregate: count, allowedLatenessMs }, { keyed: true });

  it("a record at exactly the previous session's end joins it (touching windows merge)", () => {
    const h = session(10);
    h.processElement({}, 0, "k").processElement({}, 10, "k").processElement({}, 21, "k").endOfInput();
    expect(results(h.output())).toEqual([
      { key: "k", windowStart: 0, windowEnd: 20, value: 2 },
      { key: "k", windowStart: 21, windowEnd: 31, value: 1 },
    ]);
  });

  it("an out-of-order record bridges two sessions into one", () => {
    const h = session(10);
    h.processElement({}, 0, "k").processElement({}, 18, "k");
    expect(h.stateStats().stateEntries).toBe(1);
    h.processElement({}, 9, "k"); // [9, 19) touches [0, 10) and overlaps [18, 28)
    h.endOfInput();
    expect(results(h.output())).toEqual([{ key: "k", windowStart: 0, windowEnd: 28, value: 3 }]);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });

  it("fires gapMs after the last record, one timer per key", () => {
    const h = session(10);
    h.processElement({}, 0, "k").processElement({}, 5, "k");
    expect(h.stateStats().timers).toBe(1);
    h.processWatermark(13);
    expect(h.takeOutput()).toEqual([]);
    h.processWatermark(14);
    expect(results(h.takeOutput())).toEqual([{ key: "k", windowStart: 0, windowEnd: 15, value: 2 }]);
  });

  it("with allowed lateness, a late record extends a fired session and re-emits it; after the purge it is late", () => {
    const h = session(10, 20);
    h.processElement({}, 0, "k").processWatermark(9);
    expect(results(h.takeOutput())).toEqual([{ key: "k", windowStart: 0, windowEnd: 10, value: 1 }]);
    h.processWatermark(20);
    h.processElement({}, 10, "k"); // touches [0,10): merged [0,20), 19 <= 20: fires at once
    expect(results(h.takeOutput())).toEqual([{ key: "k", windowStart: 0, windowEnd: 20, value: 2 }]);
    h.processWatermark(39); // purge at 19 + 20
    expect(h.stateStats().keys).toBe(0);
    h.processElement({ late: 1 }, 19, "k"); // its own window [19, 29) is past 28 + 20? no: 48 > 39, so it opens a new session
    h.processElement({ late: 2 }, 5, "k"); // [5, 15): cleanup 14 + 20 = 34 <= 39: late
    expect(h.takeOutput().map((o) => o.port)).toEqual(["out", "late"]);
  });
});
