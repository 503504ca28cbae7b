// A records-per-second cap on a sink, set and lifted while the job runs (POST
// /jobs/:id/nodes/:node/throttle): an operations and debugging control that makes a sink slow on
// purpose, so the backpressure it causes upstream can be seen and rehearsed. Records pass in
// order; a change of the cap wakes the writers waiting under the old one at once.

export interface ThrottleClock {
  now(): number;
  /** Resolves after `ms`, or as soon as `interrupt` resolves. */
  sleep(ms: number, interrupt: Promise<void>): Promise<void>;
}

const realClock: ThrottleClock = {
  now: () => performance.now(),
  sleep: (ms, interrupt) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      void interrupt.then(() => {
        clearTimeout(timer);
        resolve();
      });
    }),
};

/** The smallest cap accepted: below it a single record would wait longer than a checkpoint timeout. */
export const MIN_RECORDS_PER_SECOND = 0.1;

export class RecordThrottle {
  private rate: number | null = null;
  /** When the next record may pass (clock ms). */
  private nextFreeAt = Number.NEGATIVE_INFINITY;
  private changed!: Promise<void>;
  private signalChange!: () => void;

  constructor(private readonly clock: ThrottleClock = realClock) {
    this.rearm();
  }

  private rearm(): void {
    this.changed = new Promise<void>((resolve) => (this.signalChange = resolve));
  }

  get recordsPerSecond(): number | null {
    return this.rate;
  }

  /** Sets the cap (records per second) or lifts it (null). */
  set(recordsPerSecond: number | null): void {
    if (recordsPerSecond !== null && !(Number.isFinite(recordsPerSecond) && recordsPerSecond >= MIN_RECORDS_PER_SECOND)) {
      throw new RangeError(`a throttle is a number of records per second, at least ${MIN_RECORDS_PER_SECOND}, or null to lift it (got ${String(recordsPerSecond)})`);
    }
    this.rate = recordsPerSecond;
    // A new cap starts now: no credit saved up under the old one, no debt carried over.
    this.nextFreeAt = Number.NEGATIVE_INFINITY;
    const wake = this.signalChange;
    this.rearm();
    wake();
  }

  /** Resolves when `n` records may pass under the current cap (at once without one). */
  async acquire(n: number): Promise<void> {
    for (;;) {
      const rate = this.rate;
      if (rate === null) return;
      const now = this.clock.now();
      // No burst after a quiet spell: a cap is a cap from the moment records come again.
      const start = Math.max(this.nextFreeAt, now);
      if (start <= now) {
        this.nextFreeAt = start + (n * 1000) / rate;
        return;
      }
      await this.clock.sleep(start - now, this.changed);
    }
  }

  /** How many records to let through in one step: about a tenth of a second's worth, at least one. */
  chunkSize(): number {
    return this.rate === null ? Number.POSITIVE_INFINITY : Math.max(1, Math.floor(this.rate / 10));
  }
}
