import { describe, expect, it } from "vitest";
import { eventTimeOf, MAX_EVENT_TIME, parseIsoTimestamp } from "./timestamps";

describe("event time extraction", () => {
  it("reads epoch milliseconds", () => {
    expect(eventTimeOf(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(eventTimeOf(1.9)).toBe(1);
    expect(eventTimeOf("1700000000123")).toBe(1_700_000_000_123);
  });

  it("reads ISO-8601 in UTC, with offsets, fractions and date-only forms", () => {
    expect(parseIsoTimestamp("2024-03-01T12:00:00Z")).toBe(Date.UTC(2024, 2, 1, 12));
    expect(parseIsoTimestamp("2024-03-01T12:00:00.5Z")).toBe(Date.UTC(2024, 2, 1, 12, 0, 0, 500));
    expect(parseIsoTimestamp("2024-03-01T12:00:00.123456789Z")).toBe(Date.UTC(2024, 2, 1, 12, 0, 0, 123));
    expect(parseIsoTimestamp("2024-03-01T15:00:00+03:00")).toBe(Date.UTC(2024, 2, 1, 12));
    expect(parseIsoTimestamp("2024-03-01T09:30:00-0230")).toBe(Date.UTC(2024, 2, 1, 12));
    expect(parseIsoTimestamp("2024-03-01T12:00:00")).toBe(Date.UTC(2024, 2, 1, 12)); // no offset: UTC, never local
    expect(parseIsoTimestamp("2024-03-01")).toBe(Date.UTC(2024, 2, 1));
    expect(parseIsoTimestamp("2024-02-29T00:00Z")).toBe(Date.UTC(2024, 1, 29));
    expect(parseIsoTimestamp("0050-01-01T00:00:00Z")).toBe(-60589296000000);
  });

  it("refuses what is not a date-time, saying why", () => {
    expect(parseIsoTimestamp("2023-02-29")).toBeUndefined();
    expect(parseIsoTimestamp("2024-13-01")).toBeUndefined();
    expect(parseIsoTimestamp("March 7, 2024")).toBeUndefined();
    expect(eventTimeOf(undefined)).toBe("is missing");
    expect(eventTimeOf(null)).toMatch(/is null/);
    expect(eventTimeOf("yesterday")).toMatch(/"yesterday", neither epoch milliseconds nor an ISO-8601 date-time/);
    expect(eventTimeOf({ a: 1 })).toMatch(/an object/);
  });

  it("refuses times past the dates epoch milliseconds can name, where time arithmetic stops being exact", () => {
    expect(eventTimeOf(MAX_EVENT_TIME)).toBe(MAX_EVENT_TIME);
    expect(eventTimeOf(-MAX_EVENT_TIME)).toBe(-MAX_EVENT_TIME);
    expect(eventTimeOf(MAX_EVENT_TIME + 1)).toMatch(/is 8640000000000001, outside the dates epoch milliseconds can name/);
    expect(eventTimeOf("9007199254740992")).toMatch(/is 9007199254740992, outside/);
    expect(eventTimeOf(1e300)).toMatch(/outside/);
  });
});
