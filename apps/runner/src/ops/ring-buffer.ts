// The last N items of a stream in fixed memory (the drill-down taps on a node's ports): a circular
// array; pushing to a full buffer overwrites the oldest item.

export class RingBuffer<T> {
  private readonly items: Array<T | undefined>;
  private next = 0;
  private size = 0;
  /** Items pushed in all, kept or not. */
  pushed = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`a ring buffer needs a positive whole capacity (got ${capacity})`);
    this.items = new Array<T | undefined>(capacity);
  }

  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    if (this.size < this.capacity) this.size++;
    this.pushed++;
  }

  /** The kept items, oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    const start = (this.next - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++) out.push(this.items[(start + i) % this.capacity] as T);
    return out;
  }

  get length(): number {
    return this.size;
  }
}
