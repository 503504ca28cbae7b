import { describe, expect, it } from "vitest";
import { parseInstant, parseOffsets } from "./range-input";

describe("backtest range inputs", () => {
  it("reads offsets as partition:offset pairs", () => {
    expect(parseOffsets("0:100, 1:250")).toEqual({ "0": 100, "1": 250 });
    expect(parseOffsets(" 3 : 7 ")).toEqual({ "3": 7 });
    expect(parseOffsets("")).toBeNull();
    expect(parseOffsets("0=100")).toBeNull();
    expect(parseOffsets("0:100, p1:2")).toBeNull();
  });

  it("reads an instant as epoch ms or ISO-8601", () => {
    expect(parseInstant("1767225600000")).toBe(1_767_225_600_000);
    expect(parseInstant("2026-01-01T00:00:00Z")).toBe(Date.UTC(2026, 0, 1));
    expect(parseInstant("yesterday")).toBeNull();
  });
});
