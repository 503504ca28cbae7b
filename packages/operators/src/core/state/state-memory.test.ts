// State memory: large arrays shared (outside V8's external-memory accounting), small ones and
// platforms without SharedArrayBuffer plain; the state built on it answers the same past the threshold.
import { afterEach, describe, expect, it, vi } from "vitest";
import { growColumn, KeySlots } from "./slots";
import { stateFloat64Array, stateInt32Array } from "./state-memory";

describe("state memory", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.resetModules();
  });

  it("backs large state arrays with a SharedArrayBuffer and small ones with an ArrayBuffer, zeroed", () => {
    const large = stateFloat64Array(1 << 13);
    expect(large.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(large.every((v) => v === 0)).toBe(true);
    expect(stateInt32Array(16).buffer).toBeInstanceOf(ArrayBuffer);
    expect(stateInt32Array((1 << 14) - 1).buffer).toBeInstanceOf(ArrayBuffer);
    expect(stateInt32Array(1 << 14).buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it("falls back to ArrayBuffers where SharedArrayBuffer is absent (a browser without cross-origin isolation)", async () => {
    vi.stubGlobal("SharedArrayBuffer", undefined);
    vi.resetModules();
    const { stateFloat64Array: plain } = await import("./state-memory");
    expect(plain(1 << 16).buffer).toBeInstanceOf(ArrayBuffer);
  });

  it("grows columns into shared memory keeping their rows and filling new ones", () => {
    let col: Float64Array = Float64Array.from([1, 2, 3, 4]);
    col = growColumn(col, 1 << 14, 2, -1);
    expect(col.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(col.length).toBe(1 << 15);
    expect([...col.subarray(0, 6)]).toEqual([1, 2, 3, 4, -1, -1]);
    expect(col[col.length - 1]).toBe(-1);
    const bytes = growColumn(Uint8Array.from([7]), 1 << 17, 1);
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(bytes[0]).toBe(7);
  });

  it("keeps KeySlots answering as a Map once its arrays are shared (tens of thousands of keys, with deletes)", () => {
    const slots = new KeySlots();
    const model = new Map<string, number>();
    for (let i = 0; i < 40_000; i++) {
      const key = `card-${(i * 7919) % 30_000}`;
      if (i % 5 === 4 && model.has(key)) {
        slots.delete(model.get(key) as number);
        model.delete(key);
      } else {
        const slot = slots.findOrAdd(key);
        const known = model.get(key);
        if (known !== undefined) expect(slot).toBe(known);
        model.set(key, slot);
      }
    }
    expect(slots.size).toBe(model.size);
    for (const [key, slot] of model) expect(slots.find(key)).toBe(slot);
    expect(slots.find("card-absent")).toBe(-1);
  });
});
