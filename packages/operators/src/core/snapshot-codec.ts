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

/**
 * A snapshot's bytes as pieces in order, their concatenation the snapshot (encodeSnapshotPieces):
 * the large parts are the very arrays the state keeps (packed key-group columns, timer ranges),
 * not copies, so a checkpoint writes them with one gathered write instead of copying the state
 * into one buffer first.
 */
export interface SnapshotPieces {
  readonly pieces: readonly Uint8Array[];
  readonly byteLength: number;
}

/** Stands in for bytes inside a value given to encodeSnapshotPieces (see there). */
export type PieceRef = (bytes: Uint8Array | SnapshotPieces) => Uint8Array;

/** Below this, a referenced array is copied into the skeleton like any other (a piece each is not worth it). */
const MIN_PIECE_BYTES = 4096;
/**
 * A reference's stand-in: 0xc1 (a byte MessagePack never uses, nor UTF-8) four times, "kf", the
 * reference's index (uint32, big-endian) and 0xc1 six times. Packed as a bin8 of 16 bytes.
 */
const STAND_IN_BYTES = 16;
const STAND_IN_NEEDLE = Uint8Array.from([0xc4, STAND_IN_BYTES, 0xc1, 0xc1, 0xc1, 0xc1, 0x6b, 0x66]);
const STAND_IN_PACKED = 2 + STAND_IN_BYTES;

/**
 * encodeSnapshot(build(identity)) in pieces, without copying the large byte arrays the value holds
 * (a checkpoint's snapshot is mostly packed state: it was copied four times on its way to the file,
 * an operator's snapshot into its packer and out, then the job's: two fifths of the pause an
 * exactly-once checkpoint put on every record at 100 k keys). `build` returns the value to encode
 * and passes each array that may be large through `ref`: it gets a 16-byte stand-in to put in its
 * place, and the stand-ins are found in the packed skeleton afterwards and replaced by a bin header
 * and the array itself. A MessagePack bin's length is only in its header, so the result is
 * byte for byte what encodeSnapshot writes. Referenced arrays must never change afterwards (the
 * state's packed columns and timer ranges are replaced, never written over). Should the skeleton
 * hold a stand-in's bytes elsewhere (only a bin of foreign bytes could), `build` runs again and the
 * value is encoded whole.
 */
export function encodeSnapshotPieces(build: (ref: PieceRef) => unknown): SnapshotPieces {
  const refs: Array<Uint8Array | SnapshotPieces> = [];
  const value = build((bytes) => {
    if (bytes.byteLength < MIN_PIECE_BYTES) return bytes instanceof Uint8Array ? bytes : joinPieces(bytes);
    const standIn = new Uint8Array(STAND_IN_BYTES).fill(0xc1);
    standIn.set(STAND_IN_NEEDLE.subarray(2), 0);
    new DataView(standIn.buffer).setUint32(6, refs.length);
    refs.push(bytes);
    return standIn;
  });
  const packed = packr.pack(value, RESET_BUFFER_MODE);
  if (refs.length === 0) return onePiece(new Uint8Array(packed));
  const whole = (): SnapshotPieces => onePiece(encodeSnapshot(build((b) => (b instanceof Uint8Array ? b : joinPieces(b)))));
  // The stand-ins' positions, by reference index; the skeleton is copied once and cut into views.
  const at = new Array<number>(refs.length).fill(-1);
  let found = 0;
  for (let p = packed.indexOf(STAND_IN_NEEDLE); p >= 0; p = packed.indexOf(STAND_IN_NEEDLE, p + 1)) {
    const index = packed.readUInt32BE(p + STAND_IN_NEEDLE.length);
    let tail = true;
    for (let i = p + STAND_IN_NEEDLE.length + 4; i < p + STAND_IN_PACKED; i++) if (packed[i] !== 0xc1) tail = false;
    if (!tail || index >= refs.length || at[index] !== -1) return whole();
    at[index] = p;
    found++;
  }
  if (found !== refs.length) return whole();
  const skeleton = new Uint8Array(packed);
  const view = new DataView(skeleton.buffer);
  const order = at.map((p, i) => [p, i] as const).sort((a, b) => a[0] - b[0]);
  const pieces: Uint8Array[] = [];
  let from = 0;
  let byteLength = 0;
  for (const [p, i] of order) {
    const ref = refs[i] as Uint8Array | SnapshotPieces;
    const n = ref.byteLength;
    // The bin header over the stand-in's place (a bin16 or bin32: referenced arrays are never small).
    let headerEnd: number;
    if (n < 0x10000) {
      skeleton[p] = 0xc5;
      view.setUint16(p + 1, n);
      headerEnd = p + 3;
    } else {
      skeleton[p] = 0xc6;
      view.setUint32(p + 1, n);
      headerEnd = p + 5;
    }
    pieces.push(skeleton.subarray(from, headerEnd));
    byteLength += headerEnd - from;
    if (ref instanceof Uint8Array) pieces.push(ref);
    else for (const piece of ref.pieces) pieces.push(piece);
    byteLength += n;
    from = p + STAND_IN_PACKED;
  }
  if (from < skeleton.byteLength) {
    pieces.push(skeleton.subarray(from));
    byteLength += skeleton.byteLength - from;
  }
  return { pieces, byteLength };
}

function onePiece(bytes: Uint8Array): SnapshotPieces {
  return { pieces: [bytes], byteLength: bytes.byteLength };
}

/** The pieces' concatenation, in one fresh array. */
export function joinPieces(p: SnapshotPieces): Uint8Array {
  const out = new Uint8Array(p.byteLength);
  let pos = 0;
  for (const piece of p.pieces) {
    out.set(piece, pos);
    pos += piece.byteLength;
  }
  return out;
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

/**
 * A packed column's values as views of its bytes, one per value, without decoding them: a
 * changelog's chain is resolved by moving values' bytes (runtime/changelog.ts), and decoding and
 * packing again every value of a whole state took most of a second per 10 MB. MessagePack values
 * are self-delimiting; this walks their headers (by hand: msgpackr decodes, it does not skip).
 */
export function splitValues(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.byteLength; ) {
    const end = skipValue(bytes, view, at);
    out.push(bytes.subarray(at, end));
    at = end;
  }
  return out;
}

/** Where the MessagePack value starting at `at` ends. */
function skipValue(b: Uint8Array, view: DataView, at: number): number {
  let p = at;
  // Values still to skip: an array or map header adds its elements.
  for (let pending = 1; pending > 0; pending--) {
    if (p >= b.byteLength) throw new Error(`splitValues: a value starting at byte ${at} runs past the end (${b.byteLength} bytes)`);
    const t = b[p++] as number;
    if (t <= 0x7f || t >= 0xe0) continue; // fixint
    if (t <= 0x8f) pending += 2 * (t & 0x0f); // fixmap
    else if (t <= 0x9f) pending += t & 0x0f; // fixarray
    else if (t <= 0xbf) p += t & 0x1f; // fixstr
    else
      switch (t) {
        case 0xc0: // nil
        case 0xc2: // false
        case 0xc3: // true
          break;
        case 0xc4: // bin 8
        case 0xd9: // str 8
          p += 1 + (b[p] as number);
          break;
        case 0xc5: // bin 16
        case 0xda: // str 16
          p += 2 + view.getUint16(p);
          break;
        case 0xc6: // bin 32
        case 0xdb: // str 32
          p += 4 + view.getUint32(p);
          break;
        case 0xc7: // ext 8: length, type, data
          p += 2 + (b[p] as number);
          break;
        case 0xc8: // ext 16
          p += 3 + view.getUint16(p);
          break;
        case 0xc9: // ext 32
          p += 5 + view.getUint32(p);
          break;
        case 0xcc: // uint 8
        case 0xd0: // int 8
          p += 1;
          break;
        case 0xcd:
        case 0xd1:
          p += 2;
          break;
        case 0xca: // float 32
        case 0xce:
        case 0xd2:
          p += 4;
          break;
        case 0xcb: // float 64
        case 0xcf:
        case 0xd3:
          p += 8;
          break;
        case 0xd4: // fixext 1, 2, 4, 8, 16: type then data
          p += 2;
          break;
        case 0xd5:
          p += 3;
          break;
        case 0xd6:
          p += 5;
          break;
        case 0xd7:
          p += 9;
          break;
        case 0xd8:
          p += 17;
          break;
        case 0xdc: // array 16
          pending += view.getUint16(p);
          p += 2;
          break;
        case 0xdd: // array 32
          pending += view.getUint32(p);
          p += 4;
          break;
        case 0xde: // map 16
          pending += 2 * view.getUint16(p);
          p += 2;
          break;
        case 0xdf: // map 32
          pending += 2 * view.getUint32(p);
          p += 4;
          break;
        default:
          throw new Error(`splitValues: byte ${p - 1} holds 0x${t.toString(16)}, which starts no MessagePack value`);
      }
  }
  if (p > b.byteLength) throw new Error(`splitValues: a value starting at byte ${at} runs past the end (${b.byteLength} bytes)`);
  return p;
}

/** Byte-for-byte equality (the tests' check of kept packed bytes against bytes packed afresh). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A fresh buffer's least size: values are small, and each buffer is pinned while a view of it lives. */
const WRITER_CHUNK = 64 * 1024;

/**
 * Writes one stored value straight into MessagePack bytes, byte for byte what packValueView gives
 * for the same value, for storages that keep state in columns rather than objects (velocity's rows
 * of timestamps): building the stored object only to pack it was most of a checkpoint's time for
 * such a table (a million small allocations at 100 k changed keys). Only the forms whose bytes it
 * knows are written: maps of fewer than 16 fields, arrays, null, numbers (msgpackr's integer forms,
 * else float64) and ASCII strings of fewer than 32 characters; `str` answers false for any other
 * string, and the caller then packs the value with packValueView instead.
 *
 * Like msgpackr's packer it never writes over bytes it handed out: a value whose bytes do not fit
 * starts a fresh buffer, so a view stays valid as long as it is kept (copy it: it pins the buffer).
 */
export class ValueWriter {
  private buf = new Uint8Array(WRITER_CHUNK);
  private view = new DataView(this.buf.buffer);
  private start = 0;
  private pos = 0;

  /** Starts a value that takes at most `maxBytes`. */
  begin(maxBytes: number): void {
    if (this.pos + maxBytes > this.buf.byteLength) {
      this.buf = new Uint8Array(Math.max(WRITER_CHUNK, maxBytes));
      this.view = new DataView(this.buf.buffer);
      this.pos = 0;
    }
    this.start = this.pos;
  }

  /** The value written since begin(): a view, valid until dropped. */
  end(): Uint8Array {
    return this.buf.subarray(this.start, this.pos);
  }

  /** Drops the value written since begin() (its bytes are reused). */
  abandon(): void {
    this.pos = this.start;
  }

  /** A map header of `fields` (< 16) entries: each field's name (str) then its value follow. */
  map(fields: number): void {
    this.buf[this.pos++] = 0x80 | fields;
  }

  array(length: number): void {
    if (length < 0x10) this.buf[this.pos++] = 0x90 | length;
    else if (length < 0x10000) this.tagged16(0xdc, length);
    else this.tagged32(0xdd, length);
  }

  /** A tag byte, then `value` as a big-endian uint16. */
  private tagged16(tag: number, value: number): void {
    this.buf[this.pos++] = tag;
    this.view.setUint16(this.pos, value);
    this.pos += 2;
  }

  /** A tag byte, then `value` as a big-endian uint32 (int32 bits for a negative one). */
  private tagged32(tag: number, value: number): void {
    this.buf[this.pos++] = tag;
    this.view.setUint32(this.pos, value >>> 0);
    this.pos += 4;
  }

  nil(): void {
    this.buf[this.pos++] = 0xc0;
  }

  /** msgpackr's choice: the smallest integer form for an int32 or uint32 value, else float64. */
  number(value: number): void {
    const buf = this.buf;
    if (value >>> 0 === value) {
      if (value < 0x80) buf[this.pos++] = value;
      else if (value < 0x100) {
        buf[this.pos++] = 0xcc;
        buf[this.pos++] = value;
      } else if (value < 0x10000) this.tagged16(0xcd, value);
      else this.tagged32(0xce, value);
    } else if (value >> 0 === value) {
      if (value >= -0x20) buf[this.pos++] = 0x100 + value;
      else if (value >= -0x80) {
        buf[this.pos++] = 0xd0;
        buf[this.pos++] = value + 0x100;
      } else if (value >= -0x8000) this.tagged16(0xd1, value & 0xffff);
      else this.tagged32(0xd2, value);
    } else {
      buf[this.pos++] = 0xcb;
      this.view.setFloat64(this.pos, value);
      this.pos += 8;
    }
  }

  /**
   * values[from, to) as one array value, when every element is a number (a slot row of doubles,
   * a key's slices); undefined, with nothing written, as soon as one is not.
   */
  numberArray(values: ArrayLike<unknown>, from = 0, to = values.length): Uint8Array | undefined {
    this.begin(5 + (to - from) * MAX_NUMBER_BYTES);
    if (this.numbers(values, from, to)) return this.end();
    this.abandon();
    return undefined;
  }

  /** values[from, to) as an array inside the value being written; false as soon as one is not a number (the value is then to be abandoned). */
  numbers(values: ArrayLike<unknown>, from: number, to: number): boolean {
    this.array(to - from);
    for (let i = from; i < to; i++) {
      const x = values[i];
      if (typeof x !== "number") return false;
      this.number(x);
    }
    return true;
  }

  /** Writes an ASCII string of fewer than 32 characters; false (nothing written) for any other. */
  str(value: string): boolean {
    const n = value.length;
    if (n >= 0x20) return false;
    for (let i = 0; i < n; i++) if (value.charCodeAt(i) >= 0x80) return false;
    const buf = this.buf;
    buf[this.pos++] = 0xa0 | n;
    for (let i = 0; i < n; i++) buf[this.pos++] = value.charCodeAt(i);
    return true;
  }

  /** Writes src[from, from + n) as a string, when those are ASCII bytes and n < 32; false (nothing written) otherwise. */
  asciiBytes(src: Uint8Array, from: number, n: number): boolean {
    if (n >= 0x20) return false;
    for (let i = from; i < from + n; i++) if ((src[i] as number) >= 0x80) return false;
    const buf = this.buf;
    buf[this.pos++] = 0xa0 | n;
    for (let i = from; i < from + n; i++) buf[this.pos++] = src[i] as number;
    return true;
  }
}

/** Most bytes ValueWriter.number writes. */
export const MAX_NUMBER_BYTES = 9;
/** Most bytes ValueWriter.str writes (when it writes). */
export const MAX_STR_BYTES = 32;
