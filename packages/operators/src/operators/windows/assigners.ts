// Window assigners. Tumbling and hopping windows are cut into slices (Flink SQL's
// SliceAssigner / SliceSharedAssigner): a record updates one slice, and a window's result is the
// merge of the slices it covers, so state grows with the slices that hold data, not with
// size ÷ slide. Session windows merge per key
// in session-window.ts (Flink's EventTimeSessionWindows + MergingWindowSet).

/**
 * The largest multiple of `step` <= t (timestamps before the epoch included). Not `t - t % step`:
 * `%` on doubles (timestamps exceed int32) is a slow fmod call on the per-record path. The
 * division may round up across an integer, hence the one-step correction; exact below 2^53.
 */
export function floorTo(t: number, step: number): number {
  const s = Math.floor(t / step) * step;
  return s > t ? s - step : s;
}

/** a mod b, always in [0, b). */
export function floorMod(a: number, b: number): number {
  return a - floorTo(a, b);
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
    this.aligned = this.step === slide;
  }

  /** Whether the slide divides the size (slices are slide-long): the common case, with shortcuts. */
  private readonly aligned: boolean;

  sliceStart(t: number): number {
    return floorTo(t, this.step);
  }

  /** End of the first (earliest) window covering the slice starting at s. */
  firstEnd(s: number): number {
    if (this.aligned) return s + this.slide;
    const x = s + this.step - this.size; // the earliest start a covering window may have
    return x + floorMod(-x, this.slide) + this.size;
  }

  /** End of the last window covering the slice starting at s (smaller than firstEnd when no window covers it). */
  lastEnd(s: number): number {
    if (this.aligned) return s + this.size;
    return s - floorMod(s, this.slide) + this.size;
  }

  /**
   * The smallest end > x of a window holding any of the given slices, or undefined: the key's
   * next firing. The slice starts are read from `slots`, newest first, from index `from` every
   * `stride` (the sliced window operator's layout), up to `end` (the form's end in a flat buffer).
   */
  nextEnd(slots: ArrayLike<unknown>, from: number, stride: number, x: number, end = slots.length): number | undefined {
    const last = end - stride; // the oldest slice
    if (this.aligned) {
      // Window ends are the multiples of slide; window e holds the slices in [e − size, e).
      const e0 = floorTo(x, this.slide) + this.slide; // the first end > x
      for (let j = last; j >= from; j -= stride) {
        const s = slots[j] as number;
        if (s >= e0 - this.size) return s < e0 ? e0 : s + this.slide;
      }
      return undefined;
    }
    let best: number | undefined;
    for (let j = last; j >= from; j -= stride) {
      const s = slots[j] as number;
      if (best !== undefined && this.firstEnd(s) >= best) break; // newer slices only have later windows
      const e = this.endAfter(s, x);
      if (e !== undefined && (best === undefined || e < best)) best = e;
    }
    return best;
  }

  /** The smallest end > x of a window covering slice s, or undefined. */
  endAfter(s: number, x: number): number | undefined {
    const onGrid = x + 1 + floorMod(this.size - (x + 1), this.slide);
    const first = this.firstEnd(s);
    const e = onGrid > first ? onGrid : first;
    return e <= this.lastEnd(s) ? e : undefined;
  }
}
