import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeSnapshot, encodeSnapshotPieces, joinPieces, packValues, packValueView, splitValues, unpackValues, ValueWriter, type PieceRef, type SnapshotPieces } from "./snapshot-codec";

/** What the writer writes for a value it knows, or undefined when it declines (a string it cannot write). */
function written(w: ValueWriter, value: unknown): Uint8Array | undefined {
  w.begin(1 << 20);
  const write = (v: unknown): boolean => {
    if (v === null) w.nil();
    else if (typeof v === "number") w.number(v);
    else if (typeof v === "string") return w.str(v);
    else if (Array.isArray(v)) {
      w.array(v.length);
      return v.every(write);
    } else {
      const fields = Object.entries(v as object);
      w.map(fields.length);
      return fields.every(([k, x]) => w.str(k) && write(x));
    }
    return true;
  };
  if (!write(value)) {
    w.abandon();
    return undefined;
  }
  return w.end().slice();
}

const numberArb = fc.oneof(
  fc.double(),
  fc.integer({ min: -0x80000000, max: 0xffffffff }),
  fc.integer({ min: -300, max: 300 }),
  fc.constantFrom(0, -0, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, 2 ** 32, 1.7e12, Number.NaN, Infinity, -Infinity),
);
const asciiArb = fc.string({ maxLength: 31 });
const valueArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    numberArb,
    asciiArb,
    fc.array(tie("value"), { maxLength: 20, depthIdentifier: "v" }),
    fc.dictionary(asciiArb, tie("value"), { maxKeys: 15 }),
  ),
})).value;

describe("splitValues", () => {
  // Every header kind MessagePack has a packer write for state values: long strings (str 8/16/32),
  // large arrays and maps (16-bit counts), binary, booleans, undefined (an ext), floats and 64-bit integers.
  const wideArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      valueArb,
      fc.boolean(),
      fc.constant(undefined),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Number(n)),
      fc.constantFrom(32, 255, 256, 65_535, 65_536).map((n) => "é".repeat(n >> 1) + "x".repeat(n - (n >> 1))),
      fc.uint8Array({ maxLength: 300 }),
      fc.constantFrom(16, 65_535, 65_536).map((n) => new Array<number>(n).fill(1)),
      fc.dictionary(asciiArb, fc.oneof(fc.constant(null), numberArb), { minKeys: 16, maxKeys: 24 }),
      fc.array(tie("value"), { maxLength: 5, depthIdentifier: "w" }),
    ),
  })).value;

  it("splits a packed column into each value's bytes, which decode to that value", () => {
    fc.assert(
      fc.property(fc.array(wideArb, { maxLength: 8 }), (values) => {
        const bytes = packValues(values);
        const parts = splitValues(bytes);
        expect(parts).toHaveLength(values.length);
        expect(parts.reduce((n, p) => n + p.byteLength, 0)).toBe(bytes.byteLength);
        parts.forEach((part, i) => expect(unpackValues(part)).toEqual([unpackValues(packValues([values[i]]))[0]]));
      }),
      { numRuns: 150 },
    );
  });

  it("names a truncated value and a byte that starts none", () => {
    const bytes = packValues(["a string of some length", [1, 2, 3]]);
    expect(() => splitValues(bytes.subarray(0, bytes.byteLength - 1))).toThrow(/a value starting at byte \d+ runs past the end/);
    expect(() => splitValues(Uint8Array.from([0xc1]))).toThrow(/byte 0 holds 0xc1, which starts no MessagePack value/);
  });
});

describe("ValueWriter", () => {
  it("writes the bytes packValueView gives, for every value it accepts", () => {
    const w = new ValueWriter();
    fc.assert(
      fc.property(valueArb, (value) => {
        const bytes = written(w, value);
        if (bytes !== undefined) expect([...bytes]).toEqual([...packValueView(value)]);
      }),
      { numRuns: 500 },
    );
  });

  it("declines strings of 32 characters or more and non-ASCII ones, and writes nothing for them", () => {
    const w = new ValueWriter();
    for (const s of ["x".repeat(32), "é", "tx-☃", "a\u0080"]) {
      w.begin(64);
      expect(w.str(s)).toBe(false);
      expect(w.end().byteLength).toBe(0);
    }
    expect([...(written(w, ["ok", "x".repeat(31)]) ?? [])]).toEqual([...packValueView(["ok", "x".repeat(31)])]);
  });

  it("never writes over bytes it handed out: a value that does not fit starts a fresh buffer", () => {
    const w = new ValueWriter();
    const views: Uint8Array[] = [];
    const values: number[][] = [];
    for (let i = 0; i < 3000; i++) {
      const v = Array.from({ length: i % 50 }, (_, j) => i * 1000 + j + 0.5);
      w.begin(3 + 9 * v.length);
      w.array(v.length);
      for (const x of v) w.number(x);
      views.push(w.end());
      values.push(v);
    }
    views.forEach((bytes, i) => expect(unpackValues(bytes)).toEqual([values[i]]));
  });
});

/** Bytes of `n` values 0..255 from `seed` (any byte, 0xc1 included, as packed floats hold). */
const bytesOf = (n: number, seed: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (seed * 31 + i * 7) & 0xff);

describe("encodeSnapshotPieces", () => {
  /** A snapshot-like value: records of one shape, arrays of byte columns, a nested snapshot's pieces. */
  const valueOf = (ref: PieceRef, columns: Uint8Array[], nested: SnapshotPieces | undefined) => ({
    format: "test/v1",
    state: [{ name: "t", kind: "value", packedKeys: null, packed: columns.map(ref) }, { name: "u", kind: "list", packedKeys: columns.slice(0, 1).map(ref), packed: [] }],
    nested: nested === undefined ? null : ref(nested),
    counters: { a: 1, b: -2.5 },
  });
  const identity: PieceRef = (b) => (b instanceof Uint8Array ? b : joinPieces(b));

  it("gives encodeSnapshot's bytes, for arrays under, at and over the bin16 and bin32 bounds, nested pieces included", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(0, 17, 4095, 4096, 4097, 65535, 65536, 70_000), { maxLength: 6 }), fc.array(fc.constantFrom(10, 5000, 66_000), { maxLength: 3 }), (sizes, nestedSizes) => {
        const columns = sizes.map((n, i) => bytesOf(n, i));
        const nestedColumns = nestedSizes.map((n, i) => bytesOf(n, 100 + i));
        const nested = nestedSizes.length === 0 ? undefined : encodeSnapshotPieces((ref) => valueOf(ref, nestedColumns, undefined));
        const pieces = encodeSnapshotPieces((ref) => valueOf(ref, columns, nested));
        const whole = encodeSnapshot(valueOf(identity, columns, nested === undefined ? undefined : { pieces: [joinPieces(nested)], byteLength: nested.byteLength }));
        expect(pieces.byteLength).toBe(whole.byteLength);
        expect(Buffer.from(joinPieces(pieces)).equals(Buffer.from(whole))).toBe(true);
        // The large columns are the arrays themselves, not copies.
        for (const c of columns) if (c.byteLength >= 4096) expect(pieces.pieces).toContain(c);
      }),
      { numRuns: 60 },
    );
  });

  it("encodes the value whole when the skeleton holds a stand-in's bytes elsewhere", () => {
    const big = bytesOf(10_000, 1);
    // A small bin whose bytes are exactly the first reference's stand-in, beside the real reference.
    const lookalike = Uint8Array.from([0xc1, 0xc1, 0xc1, 0xc1, 0x6b, 0x66, 0, 0, 0, 0, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1]);
    let builds = 0;
    const build = (ref: PieceRef) => {
      builds++;
      return { a: ref(big), b: lookalike };
    };
    const pieces = encodeSnapshotPieces(build);
    expect(builds).toBe(2);
    expect(Buffer.from(joinPieces(pieces)).equals(Buffer.from(encodeSnapshot({ a: big, b: lookalike })))).toBe(true);
  });
});
