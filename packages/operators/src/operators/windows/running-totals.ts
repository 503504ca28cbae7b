// Per-key running totals of the slices of additive aggregates (count, sum, avg) on the heap: a
// window's result is then the key's total less the few slices outside the window, instead of a
// merge of every slice it covers (60 for a 1-hour window sliding every minute: most of the firing).
//
// The totals hold the *sealed* slices: those starting at or before the key's last firing (its F),
// which every window that fires covers or precedes. In-order records update slices after F, so they
// pay nothing here; a firing folds the slices it seals in, and only a record for a sealed slice (a
// late one) changes the totals itself.
//
// Derived, never checkpointed: a restored or rescaled key starts UNKNOWN and is recounted from its
// slices at its next firing, so snapshots are the same whichever storage wrote them. The totals
// are used only while they are exact, so that the result is bit for bit the merge's: every
// accumulator a safe integer (not -0) and the sum of their magnitudes below 2^53, which makes
// every partial sum exact in any order. A float sum (amounts with cents) stays on the merge.
import { growColumn } from "../../core/state";
import type { Slot } from "./aggregate";

/**
 * A slot's bound (below) also says what its totals are: NaN not known (a new, restored or freed
 * slot: recounted at its next firing); Infinity not exact (merge, as without totals, until the
 * key's state is dropped); otherwise exact.
 */
const UNKNOWN = Number.NaN;
const INEXACT = Number.POSITIVE_INFINITY;

const LIMIT = Number.MAX_SAFE_INTEGER;

const exact = (x: number): boolean => Number.isSafeInteger(x) && (x !== 0 || 1 / x > 0);

export class RunningTotals {
  /** By slot: the sum of each accumulator slot over the key's sealed slices (width per slot). */
  private totals: Float64Array = new Float64Array(0);
  /** By slot: the sum of those accumulators' magnitudes (the bound on every partial sum), or UNKNOWN or INEXACT. */
  private bound: Float64Array = new Float64Array(0);
  /** before()'s copy of the accumulator a record is about to change. */
  private readonly was: Float64Array;

  constructor(
    /** Slots per accumulator. */
    private readonly width: number,
    /** Slots per slice in the key's array: its start, then the accumulator. */
    private readonly stride: number,
    /** Where the first slice starts in the key's array. */
    private readonly header: number,
  ) {
    this.was = new Float64Array(width);
  }

  /** Whether slot's totals may be used. */
  isExact(slot: number): boolean {
    return (this.bound[slot] as number) <= LIMIT; // false for UNKNOWN, INEXACT and slots never seen
  }

  /** Forgets a slot: freed, or given restored state. */
  forget(slot: number): void {
    if (slot < this.bound.length) this.bound[slot] = UNKNOWN;
  }

  /** Copies the accumulator at st[off] (or zeros for a slice being created) before a record changes that sealed slice. */
  before(slot: number, st: readonly Slot[], off: number, created: boolean): void {
    if (!this.isExact(slot)) return;
    for (let w = 0; w < this.width; w++) this.was[w] = created ? 0 : (st[off + w] as number);
  }

  /** Adds the change since before() to slot's totals, or gives them up if it is not exact. */
  after(slot: number, st: readonly Slot[], off: number): void {
    if (!this.isExact(slot)) return;
    let b = this.bound[slot] as number;
    for (let w = 0; w < this.width; w++) {
      const was = this.was[w] as number;
      const now = st[off + w] as number;
      if (!exact(now)) {
        this.bound[slot] = INEXACT;
        return;
      }
      b += Math.abs(now) - Math.abs(was);
      const i = slot * this.width + w;
      this.totals[i] = (this.totals[i] as number) + (now - was);
    }
    this.bound[slot] = b > LIMIT ? INEXACT : b;
  }

  /** Takes the slices at st[from, to) out of slot's totals: they are being purged. */
  remove(slot: number, st: readonly Slot[], from: number, to: number): void {
    if (!this.isExact(slot)) return;
    const base = slot * this.width;
    let b = this.bound[slot] as number;
    for (let j = from; j < to; j += this.stride) {
      for (let w = 0; w < this.width; w++) {
        const x = st[j + 1 + w] as number;
        this.totals[base + w] = (this.totals[base + w] as number) - x;
        b -= Math.abs(x);
      }
    }
    this.bound[slot] = b;
  }

  /** Folds the slices starting in (from, upTo] into slot's totals: a firing at upTo seals them. */
  seal(slot: number, st: readonly Slot[], from: number, upTo: number): void {
    if (this.isExact(slot) && upTo > from) this.fold(slot, st, from, upTo);
  }

  /**
   * Whether slot's totals may be used for a firing that seals up to `sealed`, counting them first
   * from the slices starting at or before it when they are not known.
   */
  ready(slot: number, st: readonly Slot[], sealed: number): boolean {
    this.ensure(slot);
    if (Number.isNaN(this.bound[slot])) {
      const base = slot * this.width;
      for (let w = 0; w < this.width; w++) this.totals[base + w] = 0;
      this.bound[slot] = 0;
      this.fold(slot, st, Number.NEGATIVE_INFINITY, sealed);
    }
    return this.isExact(slot);
  }

  /** Adds the slices starting in (from, upTo] to an EXACT slot's totals, which it gives up at the first inexact one. */
  private fold(slot: number, st: readonly Slot[], from: number, upTo: number): void {
    const base = slot * this.width;
    let b = this.bound[slot] as number;
    for (let j = this.header; j < st.length; j += this.stride) {
      const s = st[j] as number;
      if (s > upTo) continue;
      if (s <= from) break;
      for (let w = 0; w < this.width; w++) {
        const x = st[j + 1 + w] as number;
        if (!exact(x)) {
          this.bound[slot] = INEXACT;
          return;
        }
        this.totals[base + w] = (this.totals[base + w] as number) + x;
        b += Math.abs(x);
      }
    }
    this.bound[slot] = b > LIMIT ? INEXACT : b;
  }

  /**
   * Writes into scratch the accumulator of the window [start, end) of an EXACT slot whose slices
   * up to `sealed` (>= end - 1) are in its totals: the totals less the sealed slices outside the
   * window, which are the newest (past its end) and the oldest (awaiting purge), read from both
   * ends of the array. Returns whether the window holds a slice.
   */
  windowInto(scratch: Slot[], slot: number, st: readonly Slot[], start: number, end: number, sealed: number): boolean {
    const W = this.stride;
    const base = slot * this.width;
    for (let w = 0; w < this.width; w++) scratch[w] = this.totals[base + w] as number;
    let newest = this.header;
    for (; newest < st.length && (st[newest] as number) >= end; newest += W) if ((st[newest] as number) <= sealed) this.subtract(scratch, st, newest);
    let oldest = st.length - W;
    for (; oldest >= newest && (st[oldest] as number) < start; oldest -= W) this.subtract(scratch, st, oldest);
    return oldest >= newest;
  }

  bytes(): number {
    return this.totals.byteLength + this.bound.byteLength;
  }

  private subtract(scratch: Slot[], st: readonly Slot[], j: number): void {
    for (let w = 0; w < this.width; w++) scratch[w] = (scratch[w] as number) - (st[j + 1 + w] as number);
  }

  private ensure(slot: number): void {
    if (slot < this.bound.length) return;
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(64, slot + 1)));
    this.totals = growColumn(this.totals, capacity, this.width);
    this.bound = growColumn(this.bound, capacity, 1, UNKNOWN);
  }
}
