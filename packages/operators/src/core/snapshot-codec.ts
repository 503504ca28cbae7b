// The byte form of snapshots: MessagePack via msgpackr, configured for determinism (plain maps in
// insertion order, no record structures whose ids depend on history, float64 kept exact).
import { Packr, Unpackr } from "msgpackr";

const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

export function encodeSnapshot(value: unknown): Uint8Array {
  const buf = packr.pack(value);
  // A plain Uint8Array copy: callers store or compare bytes; Node's Buffer pool must not leak out.
  return new Uint8Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

export function decodeSnapshot(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}
