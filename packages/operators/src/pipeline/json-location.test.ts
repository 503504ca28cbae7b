// Line and column of JSON syntax errors, as the CLI reports them for pipeline files.
import { describe, expect, it } from "vitest";
import { findJsonError, parseJsonWithLocation } from "./json-location";

describe("parseJsonWithLocation", () => {
  it.each([
    ['{\n  "a": 1,\n  "b": }', 3, 8, "expected a value, found '}'"],
    ['{"a":', 1, 6, "expected a value, found the end of the file"],
    ['{\n "a" 1}', 2, 6, "expected ':' after the property name, found '1'"],
    ["[1,2,]", 1, 6, "expected a value, found ']'"],
    ["{}x", 1, 3, "expected the end of the document, found 'x'"],
    ["{'a': 1}", 1, 2, "expected a property name in double quotes, found '''"],
    ['{"a": tru}', 1, 7, "expected a value, found 't'"],
  ])("%j fails at %i:%i", (text, line, column, message) => {
    const r = parseJsonWithLocation(text);
    expect(r).toEqual({ ok: false, message, location: { line, column } });
  });

  it("agrees with JSON.parse on valid documents", () => {
    for (const t of ['{"a":[1,-2.5e3,true,false,null,"x\\n\\u00e9"]}', "[]", ' "s" ', "0"]) {
      expect(findJsonError(t)).toBeUndefined();
      expect(parseJsonWithLocation(t)).toEqual({ ok: true, value: JSON.parse(t) });
    }
  });
});
