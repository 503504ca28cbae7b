import { describe, expect, it } from "vitest";
import { DEFAULT_RESTART_POLICY, restartDelayMs } from "./jobs";

describe("restart delays", () => {
  it("start at 1 s, double, and stop growing at 2 min", () => {
    const delays = Array.from({ length: 10 }, (_, i) => restartDelayMs(DEFAULT_RESTART_POLICY, i + 1));
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 120_000, 120_000, 120_000]);
    expect(DEFAULT_RESTART_POLICY.resetAfterMs).toBe(10 * 60_000);
  });
});
