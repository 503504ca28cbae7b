// The order in which ordered velocity's heap storage counts one timestamp's records: by key (`<`
// on strings: UTF-16 code units), then by canonical JSON, then by arrival, the order in which the
// handle storage's release timers fire and sortPending sorts. A comparator sort of ~100 keys per
// timestamp spent most of its time calling the comparator; here each key's first characters past
// the prefix all keys share become one number, the numbers are bucketed by their first character and
// sorted bucket by bucket, and only ties are compared as strings.
import type { JsonObject } from "../../core/api";
import { canonicalJson } from "../shared/fields";

/**
 * Up to this many codes an insertion sort in place: the native sort's call, and the view it sorts
 * through, cost more than it saves on the ~50 alerts of a millisecond (measured: 47 codes, 1.2 µs
 * against 1.45).
 */
const INSERTION_SORT_MAX = 64;

/** Sorts a[from, to) ascending: by insertion up to INSERTION_SORT_MAX codes, natively beyond. */
function sortRange(a: Float64Array, from: number, to: number): void {
  if (to - from > INSERTION_SORT_MAX) {
    a.subarray(from, to).sort();
    return;
  }
  for (let i = from + 1; i < to; i++) {
    const v = a[i] as number;
    let j = i - 1;
    for (; j >= from && (a[j] as number) > v; j--) a[j + 1] = a[j] as number;
    a[j + 1] = v;
  }
}

/** Sorts record indices for release; one instance per operator (its scratch arrays are reused). */
export class ReleaseOrder {
  private codes = new Float64Array(64);
  /** The codes again, bucketed by their first code unit past the prefix. */
  private bucketed = new Float64Array(64);
  /** Each index's first code unit past the prefix (its code's top byte). */
  private leads = new Int32Array(64);
  /** Per lead unit: first its count, then where its bucket starts, then where it ends. */
  private readonly bucketEnds = new Int32Array(256);
  private leadMin = 0;
  private leadMax = 0;
  private order = new Int32Array(64);
  private view = this.order.subarray(0, 0);

  /**
   * The indices 0..n-1 of `keys`/`values` in release order (a view valid until the next call).
   * Each index gets a code: its key's code units past the common prefix (up to six of them, 8 bits
   * each, 0 past the end), times 2^bits, plus the index itself, all exact in a double. A key with a
   * code unit of 255 or more there falls back to the comparator for the whole timestamp.
   * The codes are bucketed by their first unit, then each bucket sorted: keys differ at the prefix's
   * end by definition, so ~90 codes of numbered cards fall into ten buckets of nine, where one
   * insertion sort of 90 (or the native sort) cost several times more (5 to 8 % of the 1 M-key bench).
   */
  sort(keys: readonly string[], values: readonly JsonObject[], n: number): Int32Array {
    if (n > this.order.length) {
      const size = 2 ** Math.ceil(Math.log2(n));
      this.codes = new Float64Array(size);
      this.bucketed = new Float64Array(size);
      this.leads = new Int32Array(size);
      this.order = new Int32Array(size);
    }
    if (this.view.length !== n || this.view.buffer !== this.order.buffer) this.view = this.order.subarray(0, n);
    const order = this.view;
    const bits = n < 2 ? 0 : 32 - Math.clz32(n - 1);
    const chars = Math.min(6, Math.floor((53 - bits) / 8));
    if (chars === 0 || !this.encode(keys, n, bits, chars)) return this.byComparator(keys, values, order, 0, n, true);
    const codes = this.bucketed;
    this.bucket(n);
    const scale = 2 ** bits;
    for (let i = 0; i < n; i++) {
      const v = codes[i] as number;
      const hi = Math.floor(v / scale);
      order[i] = v - hi * scale;
      codes[i] = hi;
    }
    // Equal codes: keys equal in their first characters past the prefix (or equal keys). They sit
    // together, in arrival order; the comparator orders each such run.
    for (let i = 0; i < n; ) {
      let j = i + 1;
      while (j < n && codes[j] === codes[i]) j++;
      if (j - i > 1) this.byComparator(keys, values, order, i, j, false);
      i = j;
    }
    return order;
  }

  /** Writes each index's code and lead unit; false when a key has a code unit above 254 past the prefix. */
  private encode(keys: readonly string[], n: number, bits: number, chars: number): boolean {
    const k0 = keys[0] as string;
    let prefix = k0.length;
    // No `k === k0` shortcut: on two distinct strings it compares their characters anyway.
    for (let i = 1; i < n && prefix > 0; i++) {
      const k = keys[i] as string;
      const m = Math.min(prefix, k.length);
      let j = 0;
      while (j < m && k.charCodeAt(j) === k0.charCodeAt(j)) j++;
      prefix = j;
    }
    const scale = 2 ** bits;
    const codes = this.codes;
    const leads = this.leads;
    let leadMin = 255;
    let leadMax = 0;
    for (let i = 0; i < n; i++) {
      const k = keys[i] as string;
      const lead = prefix < k.length ? k.charCodeAt(prefix) + 1 : 0;
      if (lead > 255) return false;
      if (lead < leadMin) leadMin = lead;
      if (lead > leadMax) leadMax = lead;
      let code = lead;
      for (let c = 1, at = prefix + 1; c < chars; c++, at++) {
        const unit = at < k.length ? k.charCodeAt(at) + 1 : 0;
        if (unit > 255) return false;
        code = code * 256 + unit;
      }
      codes[i] = code * scale + i;
      leads[i] = lead;
    }
    this.leadMin = leadMin;
    this.leadMax = leadMax;
    return true;
  }

  /** Counting sort of the codes by lead unit into `bucketed`, then each bucket sorted by code. */
  private bucket(n: number): void {
    const codes = this.codes;
    const leads = this.leads;
    const out = this.bucketed;
    const ends = this.bucketEnds;
    const min = this.leadMin;
    const max = this.leadMax;
    if (min === max) {
      out.set(codes.subarray(0, n));
      sortRange(out, 0, n);
      return;
    }
    ends.fill(0, min, max + 1);
    for (let i = 0; i < n; i++) {
      const lead = leads[i] as number;
      ends[lead] = (ends[lead] as number) + 1;
    }
    for (let u = min, at = 0; u <= max; u++) {
      const count = ends[u] as number;
      ends[u] = at;
      at += count;
    }
    for (let i = 0; i < n; i++) {
      const lead = leads[i] as number;
      const at = ends[lead] as number;
      out[at] = codes[i] as number;
      ends[lead] = at + 1;
    }
    for (let u = min, from = 0; u <= max; u++) {
      const to = ends[u] as number;
      if (to - from > 1) sortRange(out, from, to);
      from = to;
    }
  }

  /** Orders order[from..to) by key, canonical JSON, index (`fill`: first set it to from..to-1). */
  private byComparator(keys: readonly string[], values: readonly JsonObject[], order: Int32Array, from: number, to: number, fill: boolean): Int32Array {
    if (fill) for (let i = from; i < to; i++) order[i] = i;
    const canon = new Map<number, string>();
    const canonAt = (i: number): string => {
      let c = canon.get(i);
      if (c === undefined) {
        c = canonicalJson(values[i] as JsonObject);
        canon.set(i, c);
      }
      return c;
    };
    order.subarray(from, to).sort((a, b) => {
      const ka = keys[a] as string;
      const kb = keys[b] as string;
      if (ka !== kb) return ka < kb ? -1 : 1;
      const ca = canonAt(a);
      const cb = canonAt(b);
      return ca < cb ? -1 : ca > cb ? 1 : a - b;
    });
    return order;
  }
}

/**
 * Whether a timestamp's records hit a key twice (by their slots): without repeats, ordered velocity
 * counts them in arrival order and sorts only the alerts; a key's records of one timestamp must go
 * into its window together, in release order (their ids are evidence), so repeats take the full sort.
 * A scratch open-addressing set of the slots, stamped per call instead of cleared.
 */
export class RepeatedSlots {
  private slots = new Int32Array(256);
  private stamps = new Int32Array(256);
  private stamp = 0;
  private shift = 24;

  any(slots: Int32Array, n: number): boolean {
    if (2 * n > this.slots.length) {
      const size = 2 ** Math.ceil(Math.log2(2 * n));
      this.slots = new Int32Array(size);
      this.stamps = new Int32Array(size);
      this.stamp = 0;
      this.shift = 32 - Math.log2(size);
    }
    if (this.stamp === 0x7fffffff) {
      this.stamps.fill(0);
      this.stamp = 0;
    }
    const stamp = ++this.stamp;
    const seen = this.slots;
    const stamps = this.stamps;
    const mask = seen.length - 1;
    const shift = this.shift;
    for (let i = 0; i < n; i++) {
      const s = slots[i] as number;
      // Fibonacci hashing: the product's high bits.
      let p = Math.imul(s, 0x9e3779b1) >>> shift;
      for (; stamps[p] === stamp; p = (p + 1) & mask) if (seen[p] === s) return true;
      stamps[p] = stamp;
      seen[p] = s;
    }
    return false;
  }
}
