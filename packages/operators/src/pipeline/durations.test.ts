import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { durationMs, formatDuration, isValidTimeZone, parseDuration, timeZone } from "./durations";

describe("parseDuration / formatDuration", () => {
  it.each([
    ["250ms", 250],
    ["10s", 10_000],
    ["10m", 600_000],
    ["24h", 86_400_000],
    ["7d", 604_800_000],
    ["1h30m", 5_400_000],
    ["1.5s", 1_500],
    ["5000", 5_000],
    [" 2m ", 120_000],
  ])("parses %j as %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "abc", "10x", "-5s", "1.0005s", "s10", "10 minutes"])("refuses %j", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it.each([
    [0, "0ms"],
    [250, "250ms"],
    [600_000, "10m"],
    [90_000, "1m30s"],
    [86_400_000, "1d"],
    [93_784_005, "1d2h3m4s5ms"],
  ])("formats %d ms as %j", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("round-trips every non-negative integer number of ms", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 10 * 365 * 86_400_000 }), (ms) => parseDuration(formatDuration(ms)) === ms));
  });
});

describe("durationMs()", () => {
  const schema = z.object({ windowMs: durationMs(), latenessMs: durationMs({ allowZero: true }) });

  it("normalizes numbers and duration strings to ms", () => {
    expect(schema.parse({ windowMs: "10m", latenessMs: 0 })).toEqual({ windowMs: 600_000, latenessMs: 0 });
    expect(schema.parse({ windowMs: 5000, latenessMs: "30s" })).toEqual({ windowMs: 5000, latenessMs: 30_000 });
  });

  it("refuses zero, negative, fractional and unparseable durations with a message for the param", () => {
    for (const bad of [0, -1, 1.5, "ten minutes", true]) {
      const r = schema.safeParse({ windowMs: bad, latenessMs: 0 });
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.path).toEqual(["windowMs"]);
      expect(r.error?.issues[0]?.message).toMatch(/^must be a positive duration \(milliseconds, or a string such as "250ms"/);
    }
    expect(schema.safeParse({ windowMs: 1, latenessMs: -1 }).error?.issues[0]?.message).toMatch(/^must be a duration ≥ 0/);
  });
});

describe("time zones", () => {
  it("accepts IANA names and aliases, refuses others", () => {
    expect(isValidTimeZone("Europe/Paris")).toBe(true);
    expect(isValidTimeZone("Asia/Riyadh")).toBe(true);
    expect(isValidTimeZone("UTC")).toBe(true);
    expect(isValidTimeZone("Mars/Olympus")).toBe(false);
    expect(timeZone().safeParse("Europe/Pariss").error?.issues[0]?.message).toBe('must be an IANA time zone such as "Europe/Paris" or "UTC", got "Europe/Pariss"');
  });
});
