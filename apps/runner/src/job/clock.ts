// Processing time for the runner. The engine never reads a clock; the runner reads this one and
// injects it (LocalJob.advanceProcessingTime, demo timestamps). Tests pass a manual clock.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class ManualClock implements Clock {
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  set(t: number): void {
    this.t = t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}
