// The stored form of one key's tumbling or hopping window state, shared by the window's two heap
// storages (per key in sliced-window.ts, by time in slice-columns.ts) and its handle storage:
// snapshots hold this form whichever storage wrote them.
import type { Slot } from "./aggregate";

/**
 * One key's window state, flat: [t, f, sN, accN…, …, s0, acc0…] with slices newest first.
 *   t: the key's registered timer (NO_TIME: none); f: windows whose max timestamp is <= f have fired.
 * One array of doubles per key (for numeric aggregates): the per-key cost of the operator. Newest
 * first puts the slice that in-order records update in the array's first cache line, and makes
 * the purge of the oldest slices a truncation.
 */
export type SliceState = Slot[];
export const T = 0;
export const F = 1;
export const HEADER = 2;

/**
 * The heap storages look up this many records' keys, then process them: what a chunk's lookups
 * load is still in the nearer caches when its records come (whole batches of ~1000 records,
 * the hopping bench's, ran 8-10 % slower per CPU second; 48 and 128 measured alike).
 */
export const LOOKUP_CHUNK = 128;
