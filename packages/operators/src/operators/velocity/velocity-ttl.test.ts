// velocity declares a state TTL of 2 × windowMs (the seeds' rule) beside its cleanup timer. These pin
// down that the TTL never loses a window the operator still needs: at end of input (watermark +∞),
// after a jump of the watermark far past every stamp, and with records further ahead of the
// watermark than 2 × windowMs.
import { describe, expect, it } from "vitest";
import { OperatorTestHarness } from "../../testing/harness";
import { velocitySpec } from "./velocity";

const keyed = { keyed: true };
const counts = (h: OperatorTestHarness): number[] => h.takeOutput().filter((o) => o.port === "out").map((o) => o.value.count as number);

describe("velocity state TTL (2 × windowMs)", () => {
  it("declares the TTL in stateRetention", () => {
    expect(velocitySpec.stateRetention?.(velocitySpec.params.parse({ threshold: 2, windowMs: 1_000 }))).toMatchObject({ ttlMs: 2_000, windowMs: 1_000 });
  });

  for (const mode of ["ordered", "eager"] as const) {
    it(`${mode}: records released by end of input keep their window, and end of input frees everything`, () => {
      const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 1, windowMs: 100, mode }, keyed);
      for (const t of [1_000, 1_050, 1_099, 1_500, 1_550]) h.processElement({ id: `r${t}` }, t, "card");
      h.endOfInput();
      expect(counts(h)).toEqual([1, 2, 3, 1, 2]);
      expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0, timers: 0 });
    });
  }

  it("ordered: a watermark jump far past 2 × windowMs still releases the buffered records", () => {
    const h = OperatorTestHarness.forSpec(velocitySpec, { threshold: 1, windowMs: 10 }, keyed);
    h.processElement({ id: "a" }, 100, "card").processElement({ id: "b" }, 105, "card").processElement({ id: "c" }, 500, "card");
    h.processWatermark(50_000);
    expect(counts(h)).toEqual([1, 2, 1]);
    expect(h.stateStats()).toMatchObject({ keys: 0, stateEntries: 0 });
  });
});
