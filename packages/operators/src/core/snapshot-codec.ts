// The byte form of snapshots: MessagePack via msgpackr, configured for determinism (plain maps in
// insertion order, float64 kept exact). Objects are written as records, whose structures each
// message defines for itself, in order of first use (no shared structures, so no ids that depend
// on what was packed before): state holds many objects of one shape (TTL entries { v, t }, a
// top-K's { value, count }), and a record writes their keys once instead of once per object
// (a quarter fewer bytes on a 10 MB top-K state, and faster). The reader takes both forms.
import { Packr, Unpackr } from "msgpackr";

const packr = new Packr({ useRecords: true, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

export function encodeSnapshot(value: unknown): Uint8Array {
  const buf = packr.pack(value);
  // A plain Uint8Array copy: callers store or compare bytes; Node's Buffer pool must not leak out.
  return new Uint8Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

export function decodeSnapshot(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}
