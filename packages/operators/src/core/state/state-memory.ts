// Memory for keyed state that grows with the number of keys (key tables, rows, per-slot columns).
// Large arrays live in SharedArrayBuffers, never handed to another thread: V8 counts every
// ArrayBuffer's backing store as external memory and, each time that grows 64 MB past its last full
// collection, marks the whole heap ("external memory pressure"). For state that only grows such a
// mark frees nothing, and over a million keys it paused ordered velocity 220-300 ms per 64 MB.
// SharedArrayBuffer backing stores are not counted that way (measured: 256 MB in 512 KB pieces over a
// heap of 2 M objects took 407 ms as ArrayBuffers, 2 ms shared). A dropped array is still freed, at
// the next full collection the heap's own growth starts; state grown by doubling drops at most as
// much as it keeps.

/** Below this many bytes an ArrayBuffer (small arrays are cheap to account, and cheaper to create). */
const SHARED_FROM_BYTES = 64 * 1024;

/** Absent in browsers that are not cross-origin isolated: state there uses plain ArrayBuffers. */
const Shared: SharedArrayBufferConstructor | undefined = typeof SharedArrayBuffer === "function" ? SharedArrayBuffer : undefined;

/** A zeroed buffer of `bytes` for state arrays (see above for why it may be shared). */
export function stateBuffer(bytes: number): ArrayBufferLike {
  return Shared !== undefined && bytes >= SHARED_FROM_BYTES ? new Shared(bytes) : new ArrayBuffer(bytes);
}

export function stateFloat64Array(length: number): Float64Array {
  return new Float64Array(stateBuffer(8 * length));
}

export function stateInt32Array(length: number): Int32Array {
  return new Int32Array(stateBuffer(4 * length));
}
