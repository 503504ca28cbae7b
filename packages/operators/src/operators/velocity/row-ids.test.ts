import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packValueView, ValueWriter } from "../../core/snapshot-codec";
import { dropIds, ID_AREA_BYTES, idEntryBytes, insertId, readIds, resetIds, writeIds } from "./row-ids";

type Id = string | number | null;

// UUIDs in lower, upper and mixed case (only the first two have the 17-byte form), and near misses.
const uuidArb = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.replace(/[a-f]/, (c) => c.toUpperCase())),
  fc.uuid().map((u) => `${u.slice(0, 35)}g`),
  fc.uuid().map((u) => u.replace(/-/g, "")),
);
const idArb: fc.Arbitrary<Id> = fc.oneof(
  fc.constant(null),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 20 }),
  fc.string({ minLength: 30, maxLength: 60 }),
  fc.constantFrom("é", "☃x", "tx-000000001", "00000000-0000-0000-0000-000000000000", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"),
  uuidArb,
);

describe("row ids (a velocity row's ids as bytes)", () => {
  // The reference model: an array of the ids, edited the same way.
  it("inserts and drops exactly as an array does, and refuses what does not fit or has no byte form", () => {
    const opArb = fc.oneof(fc.record({ insert: idArb, at: fc.nat() }), fc.record({ drop: fc.nat({ max: 4 }) }));
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), fc.nat({ max: 3 }), fc.nat({ max: 5 }), (ops, row, nulls) => {
        const bytes = new Uint8Array(4 * ID_AREA_BYTES).fill(0xee);
        const area = row * ID_AREA_BYTES;
        resetIds(bytes, area, nulls);
        const model: Id[] = new Array<Id>(nulls).fill(null);
        let used = 2 + nulls;
        for (const op of ops) {
          if ("insert" in op) {
            const at = op.at % (model.length + 1);
            const size = idEntryBytes(op.insert);
            const encodable = size >= 0;
            if (!encodable) {
              expect(typeof op.insert === "string" && ([...op.insert].some((c) => c.charCodeAt(0) >= 128) || op.insert.length > 239)).toBe(true);
              continue;
            }
            if (typeof op.insert === "string" && /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/.test(op.insert.toLowerCase()) && (op.insert === op.insert.toLowerCase() || op.insert === op.insert.toUpperCase())) {
              expect(size).toBe(17);
            }
            const fits = used + size <= ID_AREA_BYTES;
            expect(insertId(bytes, area, at, model.length, op.insert, size)).toBe(fits);
            if (fits) {
              model.splice(at, 0, op.insert);
              used += size;
            }
          } else {
            const n = Math.min(op.drop, model.length);
            dropIds(bytes, area, n);
            used -= model.splice(0, n).reduce<number>((b, id) => b + idEntryBytes(id), 0);
          }
          expect(readIds(bytes, area, model.length)).toEqual(model);
        }
        // The other rows' areas are untouched.
        for (let i = 0; i < bytes.length; i++) if (i < area || i >= area + ID_AREA_BYTES) expect(bytes[i]).toBe(0xee);
      }),
    );
  });

  it("writes the ids as msgpackr packs the same array, or refuses strings ValueWriter does not write", () => {
    fc.assert(
      fc.property(fc.array(idArb, { maxLength: 13 }), (ids) => {
        const bytes = new Uint8Array(ID_AREA_BYTES);
        resetIds(bytes, 0, 0);
        const kept: Id[] = [];
        let used = 2;
        for (const id of ids) {
          const size = idEntryBytes(id);
          if (size < 0 || used + size > ID_AREA_BYTES) continue;
          expect(insertId(bytes, 0, kept.length, kept.length, id, size)).toBe(true);
          kept.push(id);
          used += size;
        }
        const w = new ValueWriter();
        w.begin(1024);
        const writable = kept.every((id) => typeof id !== "string" || id.length < 32);
        expect(writeIds(bytes, 0, kept.length, w)).toBe(writable);
        if (writable) expect([...w.end()]).toEqual([...packValueView(kept)]);
      }),
    );
  });
});
