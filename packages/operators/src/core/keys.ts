// Keys and key groups: the canonical string form of a key, its murmur3 hash, and Flink's
// key-group arithmetic that assigns key groups to the subtasks of a keyed operator.
import type { JsonValue, Key } from "./api";

/** Number of key groups when the pipeline does not say (Flink's default lower bound). */
export const DEFAULT_MAX_PARALLELISM = 128;

/** A record's key could not be formed (missing, null, an object or array, a non-finite number). */
export class KeyError extends Error {
  override readonly name = "KeyError";
}

/**
 * The canonical form of a key value. Strings are kept as they are; numbers use ECMAScript's
 * Number::toString (shortest round-trip form, so 1.0 and 1 are the same key, -0 is "0"), which
 * is specified and so stable across engines and versions; booleans are "true"/"false".
 * A number and its decimal string therefore name the same key, on purpose: JSON producers are
 * inconsistent about quoting ids. Objects, arrays, null and missing values are refused: a key
 * must be a scalar, or state would scatter over accidental encodings.
 *
 * `what` names the source of the value in the error (e.g. `field "card" of node "byCard"`).
 */
export function canonicalKey(value: JsonValue | undefined, what = "key"): Key {
  switch (typeof value) {
    case "string":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new KeyError(`${what} is ${String(value)}; a numeric key must be finite`);
      return String(value);
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
      return missingKey(what);
    default:
      if (value === null) throw new KeyError(`${what} is null; records without a key cannot be keyed (filter them out first)`);
      throw new KeyError(`${what} is ${Array.isArray(value) ? "an array" : "an object"}; a key must be a string, number or boolean (key by one of its fields instead)`);
  }
}

function missingKey(what: string): never {
  throw new KeyError(`${what} is missing; records without a key cannot be keyed (filter them out first)`);
}

// ---- murmur3 -------------------------------------------------------------------------------
// MurmurHash3 x86_32 (Appleby, public domain), written here rather than taken from npm for two
// reasons: it is a fully specified function pinned by published test vectors (see keys.test.ts),
// so key groups cannot change under us with a dependency upgrade; and hashing the string's UTF-8
// bytes while encoding them avoids allocating a byte array per record on the keyBy hot path.

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK1(k1: number): number {
  k1 = Math.imul(k1, C1);
  k1 = (k1 << 15) | (k1 >>> 17);
  return Math.imul(k1, C2);
}

function mixH1(h1: number, k1: number): number {
  h1 ^= mixK1(k1);
  h1 = (h1 << 13) | (h1 >>> 19);
  return (Math.imul(h1, 5) + 0xe6546b64) | 0;
}

function finalize(h1: number, length: number): number {
  h1 ^= length;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

/** murmur3_x86_32 of raw bytes, as an unsigned 32-bit integer. */
export function murmur3_32Bytes(bytes: Uint8Array, seed = 0): number {
  let h1 = seed | 0;
  const n = bytes.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4) {
    const k1 = (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
    h1 = mixH1(h1, k1);
  }
  // The 1-3 tail bytes, little-endian (the reference's fall-through switch, unrolled).
  const tail = n & 3;
  if (tail > 0) {
    let k1 = bytes[blocks] as number;
    if (tail > 1) k1 |= (bytes[blocks + 1] as number) << 8;
    if (tail > 2) k1 |= (bytes[blocks + 2] as number) << 16;
    h1 ^= mixK1(k1);
  }
  return finalize(h1, n);
}

/**
 * murmur3_x86_32 of the UTF-8 encoding of `s` (lone surrogates encode as U+FFFD, like
 * TextEncoder), as an unsigned 32-bit integer. Equal to murmur3_32Bytes(TextEncoder(s)).
 */
export function murmur3_32(s: string, seed = 0): number {
  let h1 = seed | 0;
  let k1 = 0; // bytes of the current 4-byte block, little-endian
  let filled = 0; // how many bytes of k1 are set
  let length = 0;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    let bytes: number; // up to 4 UTF-8 bytes packed little-endian, in order
    let count: number;
    if (c < 0x80) {
      bytes = c;
      count = 1;
    } else if (c < 0x800) {
      bytes = (0xc0 | (c >> 6)) | ((0x80 | (c & 0x3f)) << 8);
      count = 2;
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < n ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
          bytes = (0xf0 | (cp >> 18)) | ((0x80 | ((cp >> 12) & 0x3f)) << 8) | ((0x80 | ((cp >> 6) & 0x3f)) << 16) | ((0x80 | (cp & 0x3f)) << 24);
          count = 4;
        } else {
          c = 0xfffd;
          bytes = (0xe0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3f)) << 8) | ((0x80 | (c & 0x3f)) << 16);
          count = 3;
        }
      } else {
        bytes = (0xe0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3f)) << 8) | ((0x80 | (c & 0x3f)) << 16);
        count = 3;
      }
    }
    for (let b = 0; b < count; b++) {
      k1 |= ((bytes >>> (8 * b)) & 0xff) << (8 * filled);
      length++;
      if (++filled === 4) {
        h1 = mixH1(h1, k1);
        k1 = 0;
        filled = 0;
      }
    }
  }
  if (filled > 0) h1 ^= mixK1(k1);
  return finalize(h1, length);
}

// ---- key groups ------------------------------------------------------------------------------

/** An inclusive range of key groups [start, end], as Flink's KeyGroupRange. */
export interface KeyGroupRange {
  start: number;
  /** Inclusive. */
  end: number;
}

function checkParallelism(maxParallelism: number, parallelism?: number): void {
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > 32_768) {
    throw new RangeError(`maxParallelism must be an integer in [1, 32768], got ${maxParallelism}`);
  }
  if (parallelism !== undefined && (!Number.isInteger(parallelism) || parallelism < 1 || parallelism > maxParallelism)) {
    throw new RangeError(`parallelism must be an integer in [1, maxParallelism=${maxParallelism}], got ${parallelism}`);
  }
}

/** The key group of a canonical key: murmur3_32(UTF-8 bytes, seed 0) mod maxParallelism. */
export function keyGroupOf(key: Key, maxParallelism = DEFAULT_MAX_PARALLELISM): number {
  return murmur3_32(key) % maxParallelism;
}

/** The subtask that owns a key group (Flink's KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup). */
export function computeOperatorIndexForKeyGroup(maxParallelism: number, parallelism: number, keyGroup: number): number {
  checkParallelism(maxParallelism, parallelism);
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** The key groups a subtask owns (Flink's computeKeyGroupRangeForOperatorIndex); contiguous and inclusive. */
export function computeKeyGroupRangeForOperatorIndex(maxParallelism: number, parallelism: number, operatorIndex: number): KeyGroupRange {
  checkParallelism(maxParallelism, parallelism);
  if (!Number.isInteger(operatorIndex) || operatorIndex < 0 || operatorIndex >= parallelism) {
    throw new RangeError(`operatorIndex must be an integer in [0, parallelism=${parallelism}), got ${operatorIndex}`);
  }
  const start = Math.floor((operatorIndex * maxParallelism + parallelism - 1) / parallelism);
  const end = Math.floor(((operatorIndex + 1) * maxParallelism - 1) / parallelism);
  return { start, end };
}

/** The subtask that owns a key. */
export function operatorIndexForKey(key: Key, maxParallelism: number, parallelism: number): number {
  return computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroupOf(key, maxParallelism));
}

export function keyGroupRangeContains(range: KeyGroupRange, keyGroup: number): boolean {
  return keyGroup >= range.start && keyGroup <= range.end;
}
