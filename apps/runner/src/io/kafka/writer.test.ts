import { describe, expect, it } from "vitest";
import { chunks } from "./writer";

describe("chunks", () => {
  it("splits a write into requests under the byte limit, in order, never leaving a message out", () => {
    const messages = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: "x".repeat(100 + i) }));
    const parts = chunks(messages, 1_000);
    expect(parts.flat()).toEqual(messages);
    for (const p of parts) expect(p.reduce((n, m) => n + String(m.value).length + String(m.key).length + 64, 0)).toBeLessThanOrEqual(1_000);
    // A message larger than the limit still goes, alone.
    expect(chunks([{ value: "y".repeat(5_000) }, { value: "z" }], 1_000).map((p) => p.length)).toEqual([1, 1]);
    expect(chunks([], 1_000)).toEqual([]);
  });
});
