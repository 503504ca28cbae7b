import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packValueView, unpackValues, ValueWriter } from "./snapshot-codec";

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
