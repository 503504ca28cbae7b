// Hot keys: keyBy { salt } → window { partial: true } → keyBy { field: "key" } → window.combine equals
// the window over the unsalted stream (two-stage, local-global aggregation).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject } from "../../core/api";
import type { OperatorSpec } from "../../core/spec";
import { OperatorTestHarness, type HarnessOutput } from "../../testing";
import { selectKey } from "../keyBy/keyBy";
import { canonicalJson } from "../shared/fields";
import { unsaltedKey, windowCombineSpec } from "./combine";
import { windowHoppingSpec } from "./window.hopping";
import { windowTumblingSpec } from "./window.tumbling";

const keyed = { keyed: true };
type Agg = { op: "count" | "sum" | "min" | "max" | "avg" | "distinctCount"; field?: string };
interface Ev {
  ts: number;
  value: JsonObject;
}
interface Case {
  /** The operator type, not its spec: counterexamples stay readable. */
  type: "window.tumbling" | "window.hopping";
  params: Record<string, unknown>;
}
const specs: Record<Case["type"], OperatorSpec> = {
  "window.tumbling": windowTumblingSpec as unknown as OperatorSpec,
  "window.hopping": windowHoppingSpec as unknown as OperatorSpec,
};

const sorted = (out: readonly HarnessOutput[], port: string): string[] =>
  out
    .filter((o) => o.port === port)
    .map((o) => `${o.timestamp}|${canonicalJson(o.value)}`)
    .sort();

/** One window over the unsalted stream (keyed by `k`), watermark max − ooo − 1 after each record. */
function direct(c: Case, ooo: number, events: readonly Ev[]): HarnessOutput[] {
  const h = OperatorTestHarness.forSpec(specs[c.type], c.params, keyed);
  let max = Number.NEGATIVE_INFINITY;
  for (const e of events) {
    h.processElement(e.value, e.ts, selectKey({ field: "k" }, e.value));
    if (e.ts > max) h.processWatermark((max = e.ts) - ooo - 1);
  }
  return h.endOfInput().output();
}

/** The two stages in lockstep: stage 1's output reaches stage 2 before the watermark that fired it. */
function twoStage(c: Case, ooo: number, events: readonly Ev[], salt: number): { out: HarnessOutput[]; late: HarnessOutput[]; s1: OperatorTestHarness; s2: OperatorTestHarness } {
  const s1 = OperatorTestHarness.forSpec(specs[c.type], { ...c.params, partial: true }, keyed);
  const s2 = OperatorTestHarness.forSpec(windowCombineSpec, { aggregate: c.params.aggregate as Agg, allowedLatenessMs: c.params.allowedLatenessMs as number }, keyed);
  const late: HarnessOutput[] = [];
  const pump = (): void => {
    for (const o of s1.takeOutput()) {
      if (o.port === "out") s2.processElement(o.value, o.timestamp, o.value.key as string);
      else late.push(o);
    }
  };
  let max = Number.NEGATIVE_INFINITY;
  for (const e of events) {
    s1.processElement(e.value, e.ts, selectKey({ field: "k", salt }, e.value));
    pump();
    if (e.ts > max) {
      max = e.ts;
      s1.processWatermark(max - ooo - 1);
      pump();
      s2.processWatermark(max - ooo - 1);
    }
  }
  s1.endOfInput();
  pump();
  s2.endOfInput();
  return { out: s2.output(), late, s1, s2 };
}

const aggArb = fc.constantFrom<Agg>({ op: "count" }, { op: "count", field: "x" }, { op: "sum", field: "x" }, { op: "min", field: "x" }, { op: "max", field: "x" }, { op: "avg", field: "x" }, { op: "distinctCount", field: "x" });

const caseArb = (aggregate: Agg, lateness: number): fc.Arbitrary<Case> =>
  fc.oneof(
    fc.integer({ min: 1, max: 30 }).map((sizeMs) => ({ type: "window.tumbling" as const, params: { sizeMs, aggregate, allowedLatenessMs: lateness } })),
    fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 5 })).map(([slideMs, k]) => ({ type: "window.hopping" as const, params: { sizeMs: slideMs * k, slideMs, aggregate, allowedLatenessMs: lateness } })),
  );

const eventsArb = (agg: Agg): fc.Arbitrary<Ev[]> =>
  fc
    .array(fc.record({ k: fc.constantFrom("a", "b", "c"), ts: fc.integer({ min: -50, max: 200 }), x: fc.integer({ min: -5, max: 5 }), hole: fc.integer({ min: 0, max: 5 }) }), { maxLength: 60 })
    .map((list) =>
      list.map(({ k, ts, x, hole }, id) => {
        const numeric = agg.op === "sum" || agg.op === "min" || agg.op === "max" || agg.op === "avg";
        const value: JsonObject = !numeric && hole === 0 ? { k, id } : !numeric && hole === 1 ? { k, id, x: null } : { k, id, x };
        return { ts, value };
      }),
    );

describe("window.combine: two-stage aggregation of salted hot keys", () => {
  it("salted + combined equals unsalted, for random streams, salts, aggregates, windows and lateness", () => {
    const arb = fc
      .tuple(aggArb, fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 6 }))
      .chain(([agg, lateness, ooo, salt]) => fc.record({ c: caseArb(agg, lateness), ooo: fc.constant(ooo), salt: fc.constant(salt), events: eventsArb(agg) }));
    fc.assert(
      fc.property(arb, ({ c, ooo, salt, events }) => {
        const want = direct(c, ooo, events);
        const got = twoStage(c, ooo, events, salt);
        expect(sorted(got.out, "out")).toEqual(sorted(want, "out"));
        // The same records are late (at stage 1), and stage 2 sees nothing late or malformed.
        const lateOf = (out: readonly HarnessOutput[]): string[] => out.filter((o) => o.port === "late").map((o) => canonicalJson(o.value)).sort();
        expect(lateOf(got.late)).toEqual(lateOf(want));
        expect(got.out.filter((o) => o.port !== "out")).toEqual([]);
        // Both stages free everything at the end.
        expect(got.s1.stateStats()).toMatchObject({ keys: 0, timers: 0 });
        expect(got.s2.stateStats()).toMatchObject({ keys: 0, timers: 0 });
      }),
      { numRuns: 300 },
    );
  });

  it("a hot key spread over 4 sub-keys: tumbling count and sum per original key", () => {
    const events: Ev[] = Array.from({ length: 40 }, (_, i) => ({ ts: i * 5, value: { k: "merchant-1", id: i, x: i } }));
    for (const op of ["count", "sum"] as const) {
      const c: Case = { type: "window.tumbling", params: { sizeMs: 100, aggregate: op === "count" ? { op } : { op, field: "x" }, allowedLatenessMs: 0 } };
      const got = twoStage(c, 0, events, 4);
      expect(got.out.map((o) => o.value)).toEqual([
        { key: "merchant-1", windowStart: 0, windowEnd: 100, value: op === "count" ? 20 : 190 },
        { key: "merchant-1", windowStart: 100, windowEnd: 200, value: op === "count" ? 20 : 590 },
      ]);
    }
  });

  it("stage 1 emits partials under the original key; the combine refuses what is not a partial of its aggregate", () => {
    const s1 = OperatorTestHarness.forSpec(windowTumblingSpec, { sizeMs: 10, aggregate: { op: "avg", field: "x" }, partial: true }, keyed);
    s1.processElement({ x: 2 }, 1, "m#3").processElement({ x: 4 }, 2, "m#3").endOfInput();
    expect(s1.output().map((o) => o.value)).toEqual([{ key: "m", subKey: "m#3", windowStart: 0, windowEnd: 10, partial: { op: "avg", acc: [6, 2] } }]);
    const s2 = OperatorTestHarness.forSpec(windowCombineSpec, { aggregate: { op: "sum", field: "x" } }, keyed);
    s2.processElement({ key: "m", windowStart: 0, windowEnd: 10, value: 3 }, 9, "m");
    s2.processElement({ key: "m", subKey: "m#3", windowStart: 0, windowEnd: 10, partial: { op: "avg", acc: [6, 2] } }, 9, "m");
    expect(s2.outputOf("errors")).toHaveLength(2);
    expect(s2.outputOf("errors")[0]?.value.error).toMatch(/partial "sum" aggregate/);
  });

  it("unsaltedKey strips only a salt suffix", () => {
    expect(unsaltedKey("card-1#7")).toBe("card-1");
    expect(unsaltedKey("a#b#0")).toBe("a#b");
    expect(unsaltedKey("a#b")).toBe("a#b");
    expect(unsaltedKey("plain")).toBe("plain");
  });
});
