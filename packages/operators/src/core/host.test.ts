import { describe, expect, it } from "vitest";
import { z } from "zod";
import { OperatorTestHarness } from "../testing";
import { canonicalKey } from "./keys";
import { valueState, type JsonObject, type ValueState } from "./api";
import { defineOperator } from "./spec";
import { OperatorHost } from "./host";

/**
 * A timer-driven test operator: each record { at, ns?, del?, pt? } registers (or deletes) an
 * event-time timer at `at` (a processing-time one when pt); onTimer emits { fired, key, ns, wm }
 * and, when the record asked for it ({ chain }), registers another timer from inside onTimer.
 * It also counts records per key in state, emitted on every timer.
 */
const timerOp = defineOperator({
  type: "test.timers",
  version: 1,
  category: "custom",
  title: "timers",
  summary: "",
  docs: "",
  params: z.object({}),
  inputs: [{ id: "in", label: "in", accepts: ["keyed"] }],
  outputs: [
    { id: "out", label: "out", kind: "keyed" },
    { id: "late", label: "late", kind: "keyed", side: true },
  ],
  requiresKeyedInput: true,
  stateful: true,
  create() {
    let count!: ValueState<number>;
    let chain!: ValueState<number>;
    return {
      open(ctx) {
        count = ctx.getValueState(valueState<number>("count"));
        chain = ctx.getValueState(valueState<number>("chain"));
      },
      processElement(rec, ctx) {
        const v = rec.value as { at: number; ns?: string; del?: boolean; pt?: boolean; chain?: number; late?: boolean; bad?: boolean };
        count.update((count.value() ?? 0) + 1);
        if (v.late) return ctx.sideOutput("late", rec.value);
        if (v.bad) return ctx.sideOutput("nope", rec.value);
        if (v.chain !== undefined) chain.update(v.chain);
        const ts = ctx.timerService;
        if (v.pt) return v.del ? ts.deleteProcessingTimeTimer(v.at, v.ns) : ts.registerProcessingTimeTimer(v.at, v.ns);
        if (v.del) ts.deleteEventTimeTimer(v.at, v.ns);
        else ts.registerEventTimeTimer(v.at, v.ns);
      },
      onTimer(timer, ctx) {
        ctx.output({ fired: timer.time, key: timer.key, ns: timer.namespace, domain: timer.domain, wm: ctx.timerService.currentWatermark(), count: count.value() ?? 0 });
        const c = chain.value();
        if (c !== undefined && c > timer.time) {
          chain.clear();
          ctx.timerService.registerEventTimeTimer(c);
        }
      },
      onWatermark(wm, out) {
        out.output({ watermark: wm });
      },
    };
  },
});

const values = (h: OperatorTestHarness): JsonObject[] => h.takeOutput().map((o) => o.value);

describe("OperatorHost timers", () => {
  it("fire in time order, ties by key, with the key's state in scope, before onWatermark", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    h.processElement({ at: 20 }, 1, "b").processElement({ at: 10 }, 1, "b").processElement({ at: 20 }, 1, "a").processElement({ at: 20 }, 2, "a");
    h.processWatermark(20);
    expect(values(h)).toEqual([
      { fired: 10, key: "b", ns: "", domain: "event", wm: 20, count: 2 },
      { fired: 20, key: "a", ns: "", domain: "event", wm: 20, count: 2 },
      { fired: 20, key: "b", ns: "", domain: "event", wm: 20, count: 2 },
      { watermark: 20 },
    ]);
    expect(h.stateStats().timers).toBe(0);
  });

  it("deduplicate, delete, and keep namespaces apart", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    h.processElement({ at: 5 }, 1, "a").processElement({ at: 5 }, 1, "a").processElement({ at: 5, ns: "x" }, 1, "a");
    h.processElement({ at: 6 }, 1, "a").processElement({ at: 6, del: true }, 1, "a");
    expect(h.stateStats().timers).toBe(2);
    h.endOfInput();
    expect(values(h).map((v) => v.ns ?? "wm")).toEqual(["", "x", "wm"]);
  });

  it("fire timers registered from onTimer at or below the watermark in the same advance", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    h.processElement({ at: 5, chain: 8 }, 1, "a");
    h.processElement({ at: 7 }, 1, "b");
    h.processWatermark(10);
    expect(values(h).map((v) => v.fired ?? "wm")).toEqual([5, 7, 8, "wm"]);
  });

  it("do not fire while the watermark is below them; a regressing watermark is ignored", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    h.processElement({ at: 10 }, 1, "a");
    h.processWatermark(9).processWatermark(5);
    expect(values(h)).toEqual([{ watermark: 9 }]);
    expect(h.watermark()).toBe(9);
  });

  it("processing-time timers fire from the injected clock only", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true, processingTime: 0 });
    h.processElement({ at: 100, pt: true }, 1, "a").processElement({ at: 50, pt: true }, 1, "b").processElement({ at: 60, pt: true }, 1, "c").processElement({ at: 60, pt: true, del: true }, 1, "c");
    h.endOfInput();
    expect(values(h)).toEqual([{ watermark: Infinity }]);
    h.setProcessingTime(99);
    expect(values(h).map((v) => [v.key, v.domain])).toEqual([["b", "processing"]]);
    h.setProcessingTime(100);
    expect(values(h).map((v) => v.key)).toEqual(["a"]);
  });

  it("refuses timers without a key, naming the node", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { nodeId: "t1" });
    expect(() => h.processElement({ at: 1 }, 1)).toThrow(/node "t1" \(test.timers\) needs a keyed input/);
  });
});

describe("OperatorHost state statistics", () => {
  /** Registers an event-time timer at each record's `at` and keeps no state: its keys have timers only. */
  const timersOnly = defineOperator({
    type: "test.timers-only",
    version: 1,
    category: "custom",
    title: "timers only",
    summary: "",
    docs: "",
    params: z.object({}),
    inputs: [{ id: "in", label: "in", accepts: ["keyed"] }],
    outputs: [{ id: "out", label: "out", kind: "keyed" }],
    requiresKeyedInput: true,
    stateful: true,
    create() {
      return {
        processElement(rec, ctx) {
          ctx.timerService.registerEventTimeTimer((rec.value as { at: number }).at);
        },
        onTimer() {},
      };
    },
  });

  it("count keys that have only timers: every call up to 10 000 timers, every tenth call beyond", () => {
    const h = OperatorTestHarness.forSpec(timersOnly, {}, { keyed: true });
    for (let i = 0; i < 3; i++) h.processElement({ at: 100 + i }, 1, `k${i}`);
    expect(h.stateStats()).toMatchObject({ keys: 3, timers: 3 });
    h.processElement({ at: 200 }, 1, "k3");
    expect(h.stateStats()).toMatchObject({ keys: 4, timers: 4 });
    for (let i = 4; i < 10_001; i++) h.processElement({ at: 1000 + i }, 1, `k${i}`);
    // Every report counts timers exactly; keys past 10 000 timers: recounted at this call, then every tenth.
    const counted = h.stateStats();
    expect(counted).toMatchObject({ keys: 10_001, timers: 10_001 });
    for (let i = 0; i < 5; i++) h.processElement({ at: 50_000 + i }, 1, `extra${i}`);
    const between = Array.from({ length: 9 }, () => h.stateStats());
    expect(between.map((s) => [s.keys, s.timers])).toEqual(Array.from({ length: 9 }, () => [10_001, 10_006]));
    expect(h.stateStats()).toMatchObject({ keys: 10_006, timers: 10_006 });
    h.processWatermark(100_000);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });
});

describe("OperatorHost outputs", () => {
  it("counts late records and refuses side outputs the spec does not declare", () => {
    const h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true, nodeId: "t2" });
    h.processElement({ at: 1, late: true }, 1, "a");
    expect(h.takeOutput()).toEqual([{ port: "late", value: { at: 1, late: true }, timestamp: 1, key: "a" }]);
    expect(h.host.metrics()).toMatchObject({ recordsIn: 1, recordsOut: 1, late: 1 });
    expect(() => h.processElement({ at: 1, bad: true }, 1, "a")).toThrow(/node "t2" \(test.timers\) emitted on side output "nope", which its spec does not declare/);
  });

  it("keys records with the spec's keySelector; a record without a key goes to errors", () => {
    const selfKeyed = defineOperator({
      ...timerOp,
      type: "test.selfKeyed",
      keySelector: () => (v) => canonicalKey(v.id, 'field "id"'),
    });
    const h = OperatorTestHarness.forSpec(selfKeyed, {}, { nodeId: "sk" });
    h.processElement({ id: 7, at: 3 }, 1).processElement({ at: 3 }, 1);
    h.processWatermark(3);
    expect(h.takeOutput()).toEqual([
      { port: "errors", value: { error: 'node "sk": field "id" is missing; records without a key cannot be keyed (filter them out first)', record: { at: 3 } }, timestamp: 1 },
      { port: "out", value: { fired: 3, key: "7", ns: "", domain: "event", wm: 3, count: 1 }, timestamp: 3, key: "7" },
      { port: "out", value: { watermark: 3 }, timestamp: 3 },
    ]);
  });
});

describe("OperatorHost.processBatch", () => {
  it("hands an operator without processBatch its records one by one, and refuses unkeyed records as processElement does", () => {
    const outs: unknown[] = [];
    const host = new OperatorHost({ nodeId: "op", spec: timerOp, params: {}, emit: (port, value, timestamp, key) => outs.push([port, value, timestamp, key]) });
    host.processBatch([{ value: { at: 5 }, timestamp: 1, key: "x" }, { value: { at: 5 }, timestamp: 2, key: "y" }, { value: { at: 5 }, timestamp: 3, key: "x" }]);
    host.processWatermark(5);
    expect(outs.map((o) => (o as [string, JsonObject])[1])).toEqual([
      { fired: 5, key: "x", ns: "", domain: "event", wm: 5, count: 2 },
      { fired: 5, key: "y", ns: "", domain: "event", wm: 5, count: 1 },
      { watermark: 5 },
    ]);
    expect(host.metrics().recordsIn).toBe(3);
    expect(() => host.processBatch([{ value: { at: 9 }, timestamp: 4 }])).toThrow(/needs a keyed input but received a record without a key/);
  });
});

describe("OperatorHost watermarks", () => {
  const host = (channels: number, out: number[]) =>
    new OperatorHost({ nodeId: "m", spec: timerOp, params: {}, emit: () => {}, inputChannels: channels, onWatermark: (w) => out.push(w) });

  it("takes the minimum over its input channels", () => {
    const wms: number[] = [];
    const h = host(2, wms);
    h.processWatermark(10, 0);
    h.processWatermark(5, 1);
    h.processWatermark(20, 1);
    h.processWatermark(30, 0);
    expect(wms).toEqual([5, 10, 20]);
  });

  it("ignores idle channels until they send a watermark again", () => {
    const wms: number[] = [];
    const h = host(2, wms);
    h.processWatermark(10, 0);
    h.markChannelIdle(1);
    expect(wms).toEqual([10]);
    expect(h.idle).toBe(false);
    h.processWatermark(12, 0);
    h.processWatermark(11, 1); // active again, below: holds nothing back retroactively
    h.processWatermark(15, 0);
    expect(wms).toEqual([10, 12]);
    h.processWatermark(14, 1);
    expect(wms).toEqual([10, 12, 14]);
  });

  it("becomes idle when every channel is idle, and ends with +infinity", () => {
    const wms: number[] = [];
    const h = host(2, wms);
    h.markChannelIdle(0);
    h.markChannelIdle(1);
    expect(h.idle).toBe(true);
    h.endOfInput();
    expect(wms).toEqual([Infinity]);
  });
});

describe("OperatorHost snapshot / restore", () => {
  it("continues exactly: state, timers, watermark, counters", () => {
    const run = (cut: number | undefined) => {
      let h = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
      const out: JsonObject[] = [];
      const steps: Array<() => void> = [
        () => h.processElement({ at: 10 }, 1, "a"),
        () => h.processElement({ at: 12, ns: "n" }, 2, "b"),
        () => h.processWatermark(10),
        () => h.processElement({ at: 15 }, 11, "a"),
        () => h.processElement({ at: 12, ns: "n", del: true }, 11, "b"),
        () => h.processWatermark(14),
        () => h.endOfInput(),
      ];
      steps.forEach((step, i) => {
        if (i === cut) {
          const bytes = h.snapshot();
          out.push(...h.takeOutput().map((o) => o.value));
          h = OperatorTestHarness.restore(timerOp, {}, bytes, { keyed: true });
        }
        step();
      });
      return { out: [...out, ...h.takeOutput().map((o) => o.value)], metrics: h.host.metrics() };
    };
    const expected = run(undefined);
    for (let cut = 0; cut < 7; cut++) expect(run(cut)).toEqual(expected);
  });

  it("produces identical bytes for identical state", () => {
    const a = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    const b = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    a.processElement({ at: 1 }, 1, "x").processElement({ at: 2 }, 1, "y");
    b.processElement({ at: 2 }, 1, "y").processElement({ at: 1 }, 1, "x");
    expect(Buffer.from(a.snapshot()).equals(Buffer.from(b.snapshot()))).toBe(true);
  });

  it("restores only the keys of a key-group range (rescaling)", () => {
    const a = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    for (let i = 0; i < 20; i++) a.processElement({ at: 100 }, 1, `k${i}`);
    const bytes = a.snapshot();
    const low = new OperatorHost({ nodeId: "op", spec: timerOp, params: {}, emit: () => {}, restoreFrom: bytes, keyGroupRange: { start: 0, end: 63 } });
    const high = new OperatorHost({ nodeId: "op", spec: timerOp, params: {}, emit: () => {}, restoreFrom: bytes, keyGroupRange: { start: 64, end: 127 } });
    expect(low.stateStats().keys + high.stateStats().keys).toBe(20);
    expect(low.stateStats().timers + high.stateStats().timers).toBe(20);
    expect(low.stateStats().keys).toBeGreaterThan(0);
    expect(high.stateStats().keys).toBeGreaterThan(0);
  });

  it("refuses a snapshot of another operator type", () => {
    const a = OperatorTestHarness.forSpec(timerOp, {}, { keyed: true });
    const other = defineOperator({ ...timerOp, type: "test.other" });
    expect(() => OperatorTestHarness.restore(other, {}, a.snapshot())).toThrow(/taken from a "test.timers" operator, not "test.other"/);
  });
});
