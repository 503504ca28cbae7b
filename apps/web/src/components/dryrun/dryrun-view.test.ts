import { describe, expect, it } from "vitest";
import { alertSummary, countRecords, formatCell, formatTimestamp, portBadges, recordColumns, sampleLines } from "./dryrun-view";

describe("dry-run view", () => {
  it("splits a JSON-lines file as the runner numbers its lines", () => {
    expect(sampleLines('{"a":1}\r\n\n{"a":2}\n')).toEqual(['{"a":1}', "", '{"a":2}']);
    expect(countRecords(sampleLines('{"a":1}\n\n{"a":2}\n'))).toBe(2);
    expect(sampleLines("")).toEqual([]);
  });

  it("pins the main port's count and the side ports that saw records", () => {
    const node = { type: "velocity", recordsIn: 9, recordsOut: 2, late: 1, deadLetters: 1, keys: 3, ports: { out: { count: 2, records: [] }, late: { count: 1, records: [] }, errors: { count: 0, records: [] } } };
    expect(portBadges(node)).toEqual([
      { port: "out", count: 2, side: false },
      { port: "late", count: 1, side: true },
    ]);
    expect(portBadges(undefined)).toEqual([]);
  });

  it("builds table columns and cells", () => {
    expect(recordColumns([{ a: 1, b: 2 }, { b: 3, c: { d: 1 } }, "x"])).toEqual(["a", "b", "c"]);
    expect(formatCell({ d: 1 })).toBe('{"d":1}');
    expect(formatCell("x".repeat(100), 10)).toBe(`${"x".repeat(9)}…`);
    expect(formatTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5))).toBe("2026-01-02T03:04:05Z");
    expect(formatTimestamp(null)).toBe("");
  });

  it("summarises an alert in one line", () => {
    const base = { sinkNodeId: "s", timestamp: 0, evidence: [], evidenceTotal: 0 };
    expect(alertSummary({ ...base, value: { key: "c1", count: 5, evidence: {} } })).toBe("count 5");
    expect(alertSummary({ ...base, value: { type: "TIMEOUT", startedAt: 1 } })).toBe("TIMEOUT");
    expect(alertSummary({ ...base, value: { txId: "t1", amount: 12000, nested: {} } })).toBe("txId t1 · amount 12000");
  });
});
