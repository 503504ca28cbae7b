// The byte form of snapshots: MessagePack via msgpackr, configured for determinism (plain maps in
// insertion order, float64 kept exact). Objects are written as records, whose structures each
// message defines for itself, in order of first use (no shared structures, so no ids that depend
// on what was packed before): state holds many objects of one shape (TTL entries { v, t }, a
// top-K's { value, count }), and a record writes their keys once instead of once per object
// (a quarter fewer bytes on a 10 MB top-K state, and faster). The reader takes both forms.
//
// Keyed state values are the exception: a table's values are packed one by one, without records,
// and concatenated (packValue, packValues). A value's bytes then do not depend on its neighbours,
// so the heap backend keeps them from one checkpoint to the next and packs again only the values
// read, written or deleted since (backend.ts, SnapshotColumns): packing every value of a large
// state at every checkpoint was most of a checkpoint's time, and it grew with the state, not with
// the change.
import { Packr, RESET_BUFFER_MODE, Unpackr } from "msgpackr";

const packr = new Packr({ useRecords: true, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const valuePackr = new Packr({ useRecords: false, variableMapSize: true });

/**
 * Why a record with a field named "__proto__" is refused wherever records enter (sources, the
 * sandbox's answers): JSON.parse keeps it as an own field, but the snapshot reader renames it (its
 * guard against prototype pollution), so such a record held in state would come back changed.
 */
export const PROTO_FIELD_REFUSAL = "which Keyflow does not accept: it could not be checkpointed and restored unchanged";

export function encodeSnapshot(value: unknown): Uint8Array {
  // RESET_BUFFER_MODE: the packer writes the next snapshot over this one's bytes (copied out below)
  // instead of moving on through its buffer and allocating a new one of the snapshot's size once it
  // is used up; large fresh buffers count against V8's external memory and trigger full collections.
  const buf = packr.pack(value, RESET_BUFFER_MODE);
  // A plain Uint8Array copy: callers store or compare bytes; Node's Buffer pool must not leak out.
  return new Uint8Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

export function decodeSnapshot(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}

/** One value's bytes in a packed column (a fresh array: the packer's own buffer is a Node Buffer it writes on into). */
export function packValue(value: unknown): Uint8Array {
  return new Uint8Array(packValueView(value));
}

/**
 * packValue without the copy: a view of the packer's buffer, for a caller that copies it at once
 * into bytes of its own. The packer never writes over bytes it returned (it moves on through its
 * buffer and starts a new one when that runs out), but a kept view would pin its whole buffer.
 * A fresh array per value was a tenth of a snapshot's time with many changed keys.
 */
export function packValueView(value: unknown): Uint8Array {
  return valuePackr.pack(value);
}

/** The concatenation of packValue(v) for each value (a fresh array). */
export function packValues(values: readonly unknown[]): Uint8Array {
  // A MessagePack array is its header followed by its elements: packing the array once and
  // dropping the header gives the same bytes as packing each element, without a call per value.
  const buf = valuePackr.pack(values);
  const first = buf[0] as number;
  const header = first >= 0x90 && first <= 0x9f ? 1 : first === 0xdc ? 3 : first === 0xdd ? 5 : -1;
  if (header < 0) throw new Error(`packValues: MessagePack array header expected, found 0x${first.toString(16)}`);
  return new Uint8Array(buf.subarray(header)); // a copy: the packer reuses its buffer
}

/** The values of a packed column, in order. */
export function unpackValues(bytes: Uint8Array): unknown[] {
  if (bytes.byteLength === 0) return [];
  return unpackr.unpackMultiple(bytes);
}

/** Byte-for-byte equality (the tests' check of kept packed bytes against bytes packed afresh). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
