// Window assigners. Tumbling and hopping windows are cut into slices (Flink SQL's
// SliceAssigner / SliceSharedAssigner): a record updates one slice, and a window's result is the
// merge of the slices it covers, so state grows with the slices that hold data, not with
// size ÷ slide. Session windows merge per key
// in session-window.ts (Flink's EventTimeSessionWindows + MergingWindowSet).

/** a mod b, always in [0, b) (timestamps before the epoch included). */
export function floorMod(a: number, b: number): number {
  const r = a % b;
  return r < 0 ? r + b : r;
}

export function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/**
 * Windows [k·slide, k·slide + size), aligned to the epoch, cut into slices of gcd(size, slide).
 * Tumbling windows are the case slide = size: one slice per window.
 */
export class SliceAssigner {
  /** Slice length: gcd(size, slide). Every window start and end is a slice boundary. */
  readonly step: number;

  constructor(
    readonly size: number,
    readonly slide: number,
  ) {
    this.step = gcd(size, slide);
  }

  sliceStart(t: number): number {
    return t - floorMod(t, this.step);
  }

  /** End of the first (earliest) window covering the slice starting at s. */
  firstEnd(s: number): number {
    const x = s + this.step - this.size; // the earliest start a covering window may have
    return x + floorMod(-x, this.slide) + this.size;
  }

  /** End of the last window covering the slice starting at s (smaller than firstEnd when no window covers it). */
  lastEnd(s: number): number {
    return s - floorMod(s, this.slide) + this.size;
  }

  /** The smallest end > x of a window covering slice s, or undefined. */
  endAfter(s: number, x: number): number | undefined {
    const onGrid = x + 1 + floorMod(this.size - (x + 1), this.slide);
    const first = this.firstEnd(s);
    const e = onGrid > first ? onGrid : first;
    return e <= this.lastEnd(s) ? e : undefined;
  }
}
