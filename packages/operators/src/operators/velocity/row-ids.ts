// The ids of a velocity row's window as bytes beside the row (RowWindows' ROW_ID_BYTES mode), not
// as a JS array of strings: at 20 k records/s a 1-minute window keeps a million id strings alive,
// most of the objects the collector marks and moves (60 % of the runner's heap objects), each
// promoted once and rewritten into an old array, for a value read only when an alert cites it.
//
// A row's area: a uint16 (where its entries end), then one entry per window entry, in window order:
//   0-239  an id string of that many code units, all below 128 (one byte each)
//   UUID   a UUID in canonical form (8-4-4-4-12 hex digits, all of one case), its 16 bytes after
//          the tag (UUID_LOWER, UUID_UPPER): the usual transaction id in 17 bytes instead of 37
//   NULL   no id
//   NUMBER a number id, 8 bytes (float64, in the platform's byte order: the area is never
//          written out as it is) after the tag
// Ids that fit none of these (longer, or with other characters), or an area that would overflow,
// keep the array (ROW_IDS): this is a compact form for the usual ids, not the only one.

import type { ValueWriter } from "../../core/snapshot-codec";

/**
 * Bytes of one row's area: 13 numbers, 9 ids of 12 characters or 7 UUIDs fit (a row holds at most
 * 13 entries). Rows are per key: 256 bytes made eager velocity's state 17 % larger per key.
 */
export const ID_AREA_BYTES = 128;
const USED = 2;
const MAX_CHARS = 239;
const UUID_LOWER = 250;
const UUID_UPPER = 251;
const NULL = 254;
const NUMBER = 255;

const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);

/** Bytes `id` takes as an entry, or -1 when it cannot be one. */
export function idEntryBytes(id: string | number | null): number {
  if (id === null) return 1;
  if (typeof id === "number") return 9;
  if (id.length > MAX_CHARS) return -1;
  if (uuidTag(id) !== 0) return 17;
  for (let i = 0; i < id.length; i++) if (id.charCodeAt(i) >= 128) return -1;
  return 1 + id.length;
}

/** UUID_LOWER or UUID_UPPER when `id` is a UUID in canonical form, hex digits all of one case; else 0. */
function uuidTag(id: string): number {
  if (id.length !== 36) return 0;
  let upper = 0; // 0: no letter yet, 1: upper case, 2: lower case
  for (let i = 0; i < 36; i++) {
    const c = id.charCodeAt(i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return 0; // -
      continue;
    }
    if (c >= 48 && c <= 57) continue;
    const letter = c >= 65 && c <= 70 ? 1 : c >= 97 && c <= 102 ? 2 : 0;
    if (letter === 0 || (upper !== 0 && upper !== letter)) return 0;
    upper = letter;
  }
  return upper === 1 ? UUID_UPPER : UUID_LOWER;
}

/** The value of hex digit `c` (validated by uuidTag). */
function hexValue(c: number): number {
  return c <= 57 ? c - 48 : c <= 70 ? c - 55 : c - 87;
}

/** Where a UUID's hex digits sit in its canonical form, two per byte. */
const UUID_DIGITS = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const uuidText = new Uint8Array(36);

/** The UUID whose 16 bytes are at b[at], in the case `tag` says. */
function uuidString(b: Uint8Array, at: number, tag: number): string {
  const letters = tag === UUID_UPPER ? 55 : 87; // 10 -> "A" or "a"
  uuidText[8] = uuidText[13] = uuidText[18] = uuidText[23] = 45;
  for (let k = 0; k < 16; k++) {
    const byte = b[at + k] as number;
    const hi = byte >>> 4;
    const lo = byte & 15;
    const d = UUID_DIGITS[k] as number;
    uuidText[d] = hi < 10 ? 48 + hi : letters + hi;
    uuidText[d + 1] = lo < 10 ? 48 + lo : letters + lo;
  }
  return asciiString(uuidText, 0, 36);
}

/** Where the entries of the area at `area` end (from the area's start: its count included). */
function idsUsed(bytes: Uint8Array, area: number): number {
  return (bytes[area] as number) | ((bytes[area + 1] as number) << 8);
}

/** Empties the area at `area`, then writes `n` null entries (a window whose entries had no ids). */
export function resetIds(bytes: Uint8Array, area: number, n: number): void {
  bytes.fill(NULL, area + USED, area + USED + n);
  setUsed(bytes, area, USED + n);
}

function setUsed(bytes: Uint8Array, area: number, used: number): void {
  bytes[area] = used & 0xff;
  bytes[area + 1] = used >>> 8;
}

/** Offset (from the area) of entry `i`, walking from entry `from` at offset `fromOffset`. */
export function idOffset(bytes: Uint8Array, area: number, i: number, from = 0, fromOffset = USED): number {
  let off = fromOffset;
  for (let k = from; k < i; k++) off += entrySize(bytes[area + off] as number);
  return off;
}

function entrySize(tag: number): number {
  return tag === NULL ? 1 : tag === NUMBER ? 9 : tag === UUID_LOWER || tag === UUID_UPPER ? 17 : 1 + tag;
}

/** The id of the entry at offset `off` of the area. */
export function readId(bytes: Uint8Array, area: number, off: number): string | number | null {
  const at = area + off;
  const tag = bytes[at] as number;
  if (tag === NULL) return null;
  if (tag === NUMBER) return readNumber(bytes, at + 1);
  if (tag === UUID_LOWER || tag === UUID_UPPER) return uuidString(bytes, at + 1, tag);
  return asciiString(bytes, at + 1, tag);
}

function readNumber(bytes: Uint8Array, at: number): number {
  for (let k = 0; k < 8; k++) scratchBytes[k] = bytes[at + k] as number;
  return scratch[0] as number;
}

// Typed to take the bytes as read: every index asciiString reads is within the entry.
const fromCharCode = String.fromCharCode as (...codes: Array<number | undefined>) => string;

/**
 * The string of the `n` one-byte code units at b[i]: fromCharCode with the bytes as arguments, 16
 * at a time. An alert decodes every id its evidence cites, and apply() over a subarray (an array
 * made for each id) took 100 ns an id against 18 ns so (node 20, 12-character ids).
 */
function asciiString(b: Uint8Array, i: number, n: number): string {
  switch (n) {
    case 0:
      return "";
    case 1:
      return fromCharCode(b[i]);
    case 2:
      return fromCharCode(b[i], b[i + 1]);
    case 3:
      return fromCharCode(b[i], b[i + 1], b[i + 2]);
    case 4:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3]);
    case 5:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4]);
    case 6:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5]);
    case 7:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6]);
    case 8:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]);
    case 9:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8]);
    case 10:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9]);
    case 11:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10]);
    case 12:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10], b[i + 11]);
    case 13:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10], b[i + 11], b[i + 12]);
    case 14:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10], b[i + 11], b[i + 12], b[i + 13]);
    case 15:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10], b[i + 11], b[i + 12], b[i + 13], b[i + 14]);
    case 16:
      return fromCharCode(b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7], b[i + 8], b[i + 9], b[i + 10], b[i + 11], b[i + 12], b[i + 13], b[i + 14], b[i + 15]);
    default:
      return asciiString(b, i, 16) + asciiString(b, i + 16, n - 16);
  }
}

/**
 * Inserts `id` as entry `i` of the `count` (the later entries move up); `size` is idEntryBytes(id).
 * False, with nothing written, when the area has no room.
 */
export function insertId(bytes: Uint8Array, area: number, i: number, count: number, id: string | number | null, size: number): boolean {
  const used = idsUsed(bytes, area);
  if (used + size > ID_AREA_BYTES) return false;
  // Records mostly come in order: appending needs no walk over the entries.
  const off = i === count ? used : idOffset(bytes, area, i);
  const at = area + off;
  if (off < used) bytes.copyWithin(at + size, at, area + used);
  if (id === null) bytes[at] = NULL;
  else if (typeof id === "number") {
    bytes[at] = NUMBER;
    scratch[0] = id;
    bytes.set(scratchBytes, at + 1);
  } else if (size === 17 && id.length === 36) {
    bytes[at] = uuidTag(id);
    for (let k = 0; k < 16; k++) {
      const d = UUID_DIGITS[k] as number;
      bytes[at + 1 + k] = (hexValue(id.charCodeAt(d)) << 4) | hexValue(id.charCodeAt(d + 1));
    }
  } else {
    bytes[at] = id.length;
    for (let k = 0; k < id.length; k++) bytes[at + 1 + k] = id.charCodeAt(k);
  }
  setUsed(bytes, area, used + size);
  return true;
}

/** Drops the first `n` entries (the later ones move down). */
export function dropIds(bytes: Uint8Array, area: number, n: number): void {
  const used = idsUsed(bytes, area);
  const off = idOffset(bytes, area, n);
  bytes.copyWithin(area + USED, area + off, area + used);
  setUsed(bytes, area, used - (off - USED));
}

/** Writes `ids` as the area's entries; false when one has no byte form or they do not fit (the area is then to be left unused). */
export function fillIds(bytes: Uint8Array, area: number, ids: ReadonlyArray<string | number | null>): boolean {
  resetIds(bytes, area, 0);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as string | number | null;
    const size = idEntryBytes(id);
    if (size < 0 || !insertId(bytes, area, i, i, id, size)) return false;
  }
  return true;
}

/** The first `n` ids of the area, as an array. */
export function readIds(bytes: Uint8Array, area: number, n: number): Array<string | number | null> {
  const ids = new Array<string | number | null>(n);
  for (let i = 0, off = USED; i < n; i++) {
    ids[i] = readId(bytes, area, off);
    off += entrySize(bytes[area + off] as number);
  }
  return ids;
}

/** Writes the first `n` ids as a MessagePack array into `w`; false when one is a string ValueWriter does not write (the value is then to be abandoned). */
export function writeIds(bytes: Uint8Array, area: number, n: number, w: ValueWriter): boolean {
  w.array(n);
  for (let i = 0, off = area + USED; i < n; i++) {
    const tag = bytes[off] as number;
    if (tag === NULL) w.nil();
    else if (tag === NUMBER) w.number(readNumber(bytes, off + 1));
    else if (tag === UUID_LOWER || tag === UUID_UPPER || !w.asciiBytes(bytes, off + 1, tag)) return false; // a UUID: 36 characters
    off += entrySize(tag);
  }
  return true;
}

/** Offset of the first entry (for callers that walk the entries with idOffset). */
export const FIRST_ID = USED;
