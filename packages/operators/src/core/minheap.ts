// A binary min-heap of the distinct times of the timer service and of the TTL expiry index.
// Plain arrays, no per-operation allocation beyond the array's own growth.

/** A min-heap of numbers. */
export class NumberMinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): number | undefined {
    return this.items[0];
  }

  push(x: number): void {
    const a = this.items;
    let i = a.length;
    a.push(x);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p] as number;
      if (parent <= x) break;
      a[i] = parent;
      i = p;
    }
    a[i] = x;
  }

  pop(): number | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) siftDown(a, last, numberLess);
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}

function siftDown<T>(a: T[], x: T, less: (x: T, y: T) => boolean): void {
  const n = a.length;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= n) break;
    const r = l + 1;
    let c = l;
    if (r < n && less(a[r] as T, a[l] as T)) c = r;
    const child = a[c] as T;
    if (!less(child, x)) break;
    a[i] = child;
    i = c;
  }
  a[i] = x;
}

const numberLess = (x: number, y: number): boolean => x < y;
