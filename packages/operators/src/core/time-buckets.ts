// Buckets by time for the heap-only buffers and schedules that replace a timer per record or per key
// (ordered velocity's waiting records, SlotSchedule's slots): found by time, handed back oldest first,
// reused once emptied.
import { NumberMinHeap } from "./minheap";

/** What TimeBuckets needs of a bucket: the time it is listed under. */
export interface TimeBucket {
  at: number;
}

/**
 * A Map of buckets by time, a min-heap of their times, a ring of recent buckets found by their
 * time's low bits, and handed-back buckets kept for reuse. The ring: most lookups are of a time
 * seen moments ago, and the Map's get of a millisecond timestamp (a heap number above 2^31) costs a
 * hash of a double per call (3 % of ordered velocity's profile). Reuse: buckets live as long as the
 * times they wait for, long enough to be promoted, and fresh ones were old-space garbage.
 */
export class TimeBuckets<B extends TimeBucket> {
  private readonly byTime = new Map<number, B>();
  private readonly order = new NumberMinHeap();
  private readonly spare: B[] = [];
  private readonly recent = new Array<B | undefined>(RECENT_BUCKETS).fill(undefined);

  /** `create` makes an empty bucket; at most `spareMax` emptied ones are kept. */
  constructor(
    private readonly create: (at: number) => B,
    private readonly spareMax: number,
  ) {}

  get size(): number {
    return this.byTime.size;
  }

  /** The bucket of time `at`: a new (or reused, emptied) one when there is none. */
  of(at: number): B {
    const r = at & (RECENT_BUCKETS - 1);
    let bucket = this.recent[r];
    if (bucket === undefined || bucket.at !== at) {
      bucket = this.byTime.get(at);
      if (bucket === undefined) {
        bucket = this.spare.pop() ?? this.create(at);
        bucket.at = at;
        this.byTime.set(at, bucket);
        this.order.push(at);
      }
      this.recent[r] = bucket;
    }
    return bucket;
  }

  /** The oldest bucket's time, or undefined when there is none. */
  oldestTime(): number | undefined {
    return this.order.peek();
  }

  /** Removes the oldest bucket and returns it; the caller empties it and hands it back (recycle). */
  takeOldest(): B {
    const at = this.order.pop() as number;
    const bucket = this.byTime.get(at) as B;
    this.byTime.delete(at);
    if (this.recent[at & (RECENT_BUCKETS - 1)] === bucket) this.recent[at & (RECENT_BUCKETS - 1)] = undefined;
    return bucket;
  }

  /** Keeps an emptied bucket for reuse. */
  recycle(bucket: B): void {
    if (this.spare.length < this.spareMax) this.spare.push(bucket);
  }

  /** The buckets, in no particular order (snapshots and stats). */
  values(): IterableIterator<B> {
    return this.byTime.values();
  }

  clear(): void {
    this.byTime.clear();
    this.recent.fill(undefined);
    this.order.clear();
  }
}

/** Buckets of() finds by their time's low bits (a power of two). */
const RECENT_BUCKETS = 4096;
