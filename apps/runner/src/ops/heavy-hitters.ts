// The hottest keys of a keyed operator, in bounded memory: the Space-Saving sketch (Metwally,
// Agrawal, El Abbadi 2005). It keeps `capacity` counters; a key not counted takes over the smallest
// counter and inherits its count as its possible overestimate (`error`). Any key with a true count
// above total / capacity is guaranteed to be kept, and each count is at most `error` too high.

export interface HeavyHitter {
  key: string;
  /** An upper bound of the key's records; at most `error` above the true count. */
  count: number;
  error: number;
}

export class SpaceSaving {
  private readonly counts = new Map<string, { count: number; error: number }>();
  private seen = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`a Space-Saving sketch needs a positive whole capacity (got ${capacity})`);
  }

  /** Records seen in all. */
  get total(): number {
    return this.seen;
  }

  offer(key: string, n = 1): void {
    this.seen += n;
    const c = this.counts.get(key);
    if (c) {
      c.count += n;
      return;
    }
    if (this.counts.size < this.capacity) {
      this.counts.set(key, { count: n, error: 0 });
      return;
    }
    // Evict the smallest counter (a linear scan: capacities are small, tens of keys).
    let minKey = "";
    let min = Number.POSITIVE_INFINITY;
    for (const [k, v] of this.counts) {
      if (v.count < min) {
        min = v.count;
        minKey = k;
      }
    }
    this.counts.delete(minKey);
    this.counts.set(key, { count: min + n, error: min });
  }

  /** The `k` largest counters, largest first (ties by key, so the order is stable). */
  top(k: number = this.capacity): HeavyHitter[] {
    return [...this.counts]
      .map(([key, v]) => ({ key, count: v.count, error: v.error }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .slice(0, k);
  }

  /** Folds another sketch in (the per-subtask sketches of one operator, for its job-wide top keys). */
  static merge(capacity: number, sketches: readonly SpaceSaving[]): SpaceSaving {
    const out = new SpaceSaving(capacity);
    const all = new Map<string, { count: number; error: number }>();
    for (const s of sketches) {
      out.seen += s.seen;
      for (const [k, v] of s.counts) {
        const prev = all.get(k);
        all.set(k, prev ? { count: prev.count + v.count, error: prev.error + v.error } : { ...v });
      }
    }
    const kept = [...all].sort((a, b) => b[1].count - a[1].count).slice(0, capacity);
    for (const [k, v] of kept) out.counts.set(k, v);
    return out;
  }
}
