import { describe, expect, it } from "vitest";
import { canonicalJson, graphHash } from "./canonical-json";

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: "x" } })).toBe('{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it("drops undefined members like JSON.stringify, and writes undefined array items as null", () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
  });

  it("refuses values JSON cannot carry", () => {
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
  });
});

describe("graphHash", () => {
  it("is the same for documents that differ only in key order", () => {
    const a = { format: "keyflow.pipeline/v1", name: "p", nodes: [{ id: "a", type: "x", params: { q: 1, p: 2 } }] };
    const b = { nodes: [{ params: { p: 2, q: 1 }, type: "x", id: "a" }], name: "p", format: "keyflow.pipeline/v1" };
    expect(graphHash(a)).toBe(graphHash(b));
    expect(graphHash(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes when a value changes", () => {
    expect(graphHash({ a: 1 })).not.toBe(graphHash({ a: 2 }));
  });
});
