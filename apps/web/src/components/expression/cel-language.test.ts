import { describe, expect, it } from "vitest";
import { celCompletions, celMarkers, celMonarch, identifierSpans } from "./cel-language";

const site = { nodeId: "large", param: "expression" };
const fields = ["amount", "country", "cardCountry", "merchant", "ts"];

describe("identifierSpans", () => {
  it("finds root identifiers and members, skipping strings and comments", () => {
    const spans = identifierSpans('amount > 10 && merchant.risk == "amount" // amount\n || r"country" == country');
    expect(spans.map((s) => [s.name, s.start, s.member])).toEqual([
      ["amount", 0, false],
      ["merchant", 15, false],
      ["risk", 24, true],
      ["country", 69, false],
    ]);
  });

  it("handles escapes, single quotes and triple quotes", () => {
    expect(identifierSpans(String.raw`'it\'s' + """a "quoted" amount""" + x`).map((s) => s.name)).toEqual(["x"]);
    expect(identifierSpans("riskLevel == bLevel").map((s) => s.name)).toEqual(["riskLevel", "bLevel"]);
  });
});

describe("celMarkers", () => {
  it("is empty for a valid expression over known fields", () => {
    expect(celMarkers('amount > 50000 && country != "SA"', site, fields)).toEqual([]);
  });

  it("marks a syntax error where the parser stopped, with line and column", () => {
    const [m, ...rest] = celMarkers("amount >\n  && country", site, fields);
    expect(rest).toEqual([]);
    expect(m).toMatchObject({ severity: "error", code: "expression-syntax", startLineNumber: 2 });
    expect(m?.message).toMatch(/syntax error at line 2/);
    expect((m?.endColumn ?? 0) > (m?.startColumn ?? 0) || (m?.endLineNumber ?? 0) > (m?.startLineNumber ?? 0)).toBe(true);
  });

  it("marks an incomplete expression at its end, at least one character wide", () => {
    const [m] = celMarkers("amount >", site, fields);
    expect(m).toMatchObject({ code: "expression-syntax", startLineNumber: 1 });
    expect(m?.message).toMatch(/unexpected end of the expression/);
    expect((m?.endColumn ?? 0) - (m?.startColumn ?? 0)).toBeGreaterThanOrEqual(1);
  });

  it("marks every root use of an unknown field, suggesting the near one", () => {
    const markers = celMarkers("amont > 10 && amont < 99 && x.amont == 1", site, [...fields, "x"]);
    expect(markers.map((m) => [m.startLineNumber, m.startColumn, m.endColumn])).toEqual([
      [1, 1, 6],
      [1, 15, 20],
    ]);
    expect(markers[0]?.message).toMatch(/unknown field "amont" — did you mean "amount"\?/);
  });

  it("checks no fields when the record's fields are unknown", () => {
    expect(celMarkers("whatever > 1", site, undefined)).toEqual([]);
  });
});

describe("celCompletions", () => {
  it("offers the record's fields first, then functions and keywords", () => {
    const items = celCompletions("amount > 10 && ", fields);
    expect(items.filter((i) => i.kind === "field").map((i) => i.label)).toEqual(fields);
    expect(items.some((i) => i.label === "has" && i.snippet)).toBe(true);
    expect(items.some((i) => i.label === "true" && i.kind === "keyword")).toBe(true);
    const sorted = [...items].sort((a, b) => a.sortText.localeCompare(b.sortText));
    expect(sorted[0]?.kind).toBe("field");
  });

  it("offers methods and macros after a dot, and nothing inside a string", () => {
    const items = celCompletions("tags.ex", fields);
    expect(items.map((i) => i.label)).toContain("exists");
    expect(items.every((i) => i.kind === "method")).toBe(true);
    expect(celCompletions('country == "S', fields)).toEqual([]);
  });
});

describe("the Monarch definition", () => {
  it("knows CEL's keywords, reserved words and macros", () => {
    expect(celMonarch.keywords).toEqual(["true", "false", "null", "in"]);
    expect(celMonarch.reserved).toContain("while");
    expect(celMonarch.functions).toEqual(expect.arrayContaining(["has", "exists", "matches", "size"]));
    // every regex compiles (Monaco compiles them the same way)
    for (const rules of Object.values(celMonarch.tokenizer)) {
      for (const rule of rules) expect(rule[0]).toBeInstanceOf(RegExp);
    }
  });
});
