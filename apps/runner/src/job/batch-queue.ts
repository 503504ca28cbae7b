// The hand-over point between sources and the driver: sources put batches in, the driver takes
// them one at a time, and a source's put resolves only when the driver has processed its batch.
// With one batch in flight per source, a slow job slows its sources instead of buffering.
export type QueueItem<T> = { item: T; done: () => void };

export class BatchQueue<T> {
  private readonly items: QueueItem<T>[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  /** Resolves when the driver has processed `item` (or immediately once the queue is closed). */
  put(item: T): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.items.push({ item, done: resolve });
      this.wake();
    });
  }

  /** The next item, or undefined after `timeoutMs` or a wake-up. */
  async take(timeoutMs: number): Promise<QueueItem<T> | undefined> {
    const first = this.items.shift();
    if (first || this.closed) return first;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve();
      }, Math.max(0, timeoutMs));
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = undefined;
        resolve();
      };
    });
    return this.items.shift();
  }

  /** Items put and not yet taken. */
  get waiting(): number {
    return this.items.length;
  }

  wake(): void {
    this.waiter?.();
  }

  /** Releases every waiting source; later puts resolve at once. */
  close(): void {
    this.closed = true;
    for (const { done } of this.items.splice(0)) done();
    this.wake();
  }
}
