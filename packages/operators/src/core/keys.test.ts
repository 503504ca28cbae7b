import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalKey,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  keyGroupOf,
  KeyError,
  murmur3_32,
  murmur3_32Bytes,
} from "./keys";

// Vectors from the reference implementation (SMHasher MurmurHash3_x86_32; cross-checked with
// Python's mmh3). If one of these changes, every checkpoint's key groups change: never "fix" them.
const vectors: Array<[string, number, number]> = [
  ["", 0, 0x0],
  ["", 1, 0x514e28b7],
  ["", 0xffffffff, 0x81f16f39],
  ["\0\0\0\0", 0, 0x2362f9de],
  ["aaaa", 0x9747b28c, 0x5a97808a],
  ["abc", 0, 0xb3dd93fa],
  ["Hello, world!", 0x9747b28c, 0x24884cba],
  ["Hello, world!", 0, 0xc0363e43],
  ["The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2fa826cd],
  ["π", 0x9747b28c, 0x445626f5],
  ["é", 0, 0x10110787],
  ["日本語のキー", 0, 0x363275b6],
  ["😀x", 0, 0x721ce13e],
  ["card-42", 0, 0xae8aaee2],
  ["12345", 0, 0x13a51193],
];

describe("murmur3_32", () => {
  it.each(vectors)("%j seed %d", (s, seed, expected) => {
    expect(murmur3_32(s, seed)).toBe(expected);
    expect(murmur3_32Bytes(new TextEncoder().encode(s), seed)).toBe(expected);
  });

  it("hashes the UTF-8 bytes, like TextEncoder (lone surrogates as U+FFFD)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.integer({ min: 0, max: 0xffffffff }), (s, seed) => {
        expect(murmur3_32(s, seed)).toBe(murmur3_32Bytes(new TextEncoder().encode(s), seed));
      }),
    );
    expect(murmur3_32("\ud800")).toBe(murmur3_32("\ufffd"));
  });
});

describe("canonicalKey", () => {
  it("keeps strings, canonicalizes numbers and booleans", () => {
    expect(canonicalKey("card-1")).toBe("card-1");
    expect(canonicalKey(42)).toBe("42");
    expect(canonicalKey(42.0)).toBe("42");
    expect(canonicalKey(-0)).toBe("0");
    expect(canonicalKey(0.1)).toBe("0.1");
    expect(canonicalKey(1e21)).toBe("1e+21");
    expect(canonicalKey(true)).toBe("true");
    expect(canonicalKey(false)).toBe("false");
  });

  it("refuses objects, arrays, null, missing and non-finite values with a clear error", () => {
    expect(() => canonicalKey({ a: 1 }, 'field "card"')).toThrow(/field "card" is an object/);
    expect(() => canonicalKey([1])).toThrow(KeyError);
    expect(() => canonicalKey(null, 'field "card"')).toThrow(/field "card" is null/);
    expect(() => canonicalKey(undefined, 'field "card"')).toThrow(/field "card" is missing/);
    expect(() => canonicalKey(Number.NaN)).toThrow(/finite/);
  });
});

describe("key groups", () => {
  it("are murmur3 mod maxParallelism and stable (vectors)", () => {
    expect(keyGroupOf("card-42")).toBe(0xae8aaee2 % 128);
    expect(keyGroupOf("12345")).toBe(0x13a51193 % 128);
    expect(keyGroupOf("12345", 32768)).toBe(0x13a51193 % 32768);
    expect(keyGroupOf(canonicalKey(12345))).toBe(keyGroupOf("12345"));
  });

  it("ranges partition [0, maxParallelism) and agree with computeOperatorIndexForKeyGroup", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 512 }), fc.integer({ min: 1, max: 512 }), (maxP, p0) => {
        const parallelism = Math.min(p0, maxP);
        let next = 0;
        for (let i = 0; i < parallelism; i++) {
          const r = computeKeyGroupRangeForOperatorIndex(maxP, parallelism, i);
          expect(r.start).toBe(next);
          for (let kg = r.start; kg <= r.end; kg++) expect(computeOperatorIndexForKeyGroup(maxP, parallelism, kg)).toBe(i);
          next = r.end + 1;
        }
        expect(next).toBe(maxP);
      }),
    );
  });

  it("match Flink's assignment for 128 key groups over 3 subtasks", () => {
    expect(computeKeyGroupRangeForOperatorIndex(128, 3, 0)).toEqual({ start: 0, end: 42 });
    expect(computeKeyGroupRangeForOperatorIndex(128, 3, 1)).toEqual({ start: 43, end: 85 });
    expect(computeKeyGroupRangeForOperatorIndex(128, 3, 2)).toEqual({ start: 86, end: 127 });
    expect(computeOperatorIndexForKeyGroup(128, 3, 42)).toBe(0);
    expect(computeOperatorIndexForKeyGroup(128, 3, 43)).toBe(1);
  });

  it("refuses a parallelism above maxParallelism", () => {
    expect(() => computeOperatorIndexForKeyGroup(128, 129, 0)).toThrow(/parallelism/);
  });
});
