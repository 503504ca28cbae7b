// The network stack between the tasks of a parallel job, transport-free so it can be unit-tested:
//
// - `InputGate`: a task's input channels. Buffers are consumed in arrival order over the channels;
//   checkpoint barriers are aligned (Flink's aligned checkpoints): a channel that delivered barrier n
//   is blocked (its later buffers wait, unconsumed, so its sender runs out of credit) until every
//   channel still open has delivered barrier n; then the gate yields `aligned` once, with the
//   alignment time (first barrier to last), and unblocks.
// - `CreditSender`: the sending side of one channel with credit-based flow control (Flink's
//   credit-based network stack): the receiver grants one credit per buffer it can hold, the sender
//   sends a data buffer only with a credit and waits otherwise (backpressure), the receiver returns
//   the credit once it has processed the buffer. Events (barriers, end of input) need no credit and
//   stay in order with the data. In-flight records are bounded by credits × records per buffer.
// - `TimeAccount`: busy / backpressured / idle milliseconds per second of one task, as Flink's
//   busyTimeMsPerSecond, backPressuredTimeMsPerSecond and idleTimeMsPerSecond.

/**
 * What a barrier asks of the task that aligns it, beside its id (Flink's CheckpointOptions): with
 * `changelog`, the kind of changelog snapshot to take (LocalJob.snapshotPieces), chosen per subtask
 * by the coordinator, which alone knows whether the task's last snapshot was written.
 */
export interface BarrierOptions {
  changelog?: "whole" | "changes";
}

/** What travels on a channel: data (an encoded buffer of `records` records) or an event. */
export type ChannelItem<P> =
  | { kind: "data"; payload: P; records: number }
  | { kind: "barrier"; id: number; options?: BarrierOptions }
  | { kind: "end" };

export type GateNext<P> =
  | { kind: "data"; channel: number; payload: P; records: number }
  | { kind: "aligned"; id: number; alignmentMs: number; options?: BarrierOptions }
  | { kind: "end" };

export class InputGate<P> {
  private readonly queues: Array<Array<{ seq: number; item: ChannelItem<P> }>>;
  private readonly blocked: boolean[];
  private readonly ended: boolean[];
  private seq = 0;
  /** The barrier being aligned, with when its first barrier arrived. */
  private aligning: { id: number; startedAt: number; options: BarrierOptions | undefined } | undefined;
  /** Barriers at or below this id are dropped (completed, aborted or superseded). */
  private doneUpTo = 0;
  private endYielded = false;

  constructor(
    readonly channels: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!Number.isInteger(channels) || channels < 1) throw new RangeError(`an input gate needs at least one channel, got ${channels}`);
    this.queues = Array.from({ length: channels }, () => []);
    this.blocked = new Array<boolean>(channels).fill(false);
    this.ended = new Array<boolean>(channels).fill(false);
  }

  /** An item arrived on `channel` (in that channel's order). */
  push(channel: number, item: ChannelItem<P>): void {
    const q = this.queues[channel];
    if (q === undefined) throw new RangeError(`no input channel ${channel} (of ${this.channels})`);
    q.push({ seq: this.seq++, item });
  }

  /** The barrier id being aligned, if any. */
  get pendingBarrier(): number | undefined {
    return this.aligning?.id;
  }

  /** Buffers queued but not yet consumed (all channels). */
  get queuedRecords(): number {
    let n = 0;
    for (const q of this.queues) for (const e of q) if (e.item.kind === "data") n += e.item.records;
    return n;
  }

  /**
   * Gives up checkpoint `id` (timed out or declined): its blocked channels flow again, and its
   * barriers arriving later are dropped.
   */
  abort(id: number): void {
    this.doneUpTo = Math.max(this.doneUpTo, id);
    if (this.aligning !== undefined && this.aligning.id <= id) {
      this.aligning = undefined;
      this.blocked.fill(false);
    }
  }

  /** The next thing for the task to do, or undefined when it must wait for input. */
  poll(): GateNext<P> | undefined {
    for (;;) {
      const aligned = this.checkAligned();
      if (aligned) return aligned;
      // The earliest-arrived head among the channels that are not blocked.
      let best = -1;
      let bestSeq = Infinity;
      for (let c = 0; c < this.channels; c++) {
        if (this.blocked[c]) continue;
        const head = this.queues[c]![0];
        if (head !== undefined && head.seq < bestSeq) {
          bestSeq = head.seq;
          best = c;
        }
      }
      if (best < 0) {
        if (!this.endYielded && this.ended.every(Boolean)) {
          this.endYielded = true;
          return { kind: "end" };
        }
        return undefined;
      }
      const { item } = this.queues[best]!.shift()!;
      switch (item.kind) {
        case "data":
          return { kind: "data", channel: best, payload: item.payload, records: item.records };
        case "end":
          this.ended[best] = true;
          this.blocked[best] = false;
          continue;
        case "barrier":
          this.onBarrier(best, item.id, item.options);
          continue;
      }
    }
  }

  private onBarrier(channel: number, id: number, options: BarrierOptions | undefined): void {
    if (id <= this.doneUpTo) return;
    if (this.aligning !== undefined && id < this.aligning.id) return; // an older barrier: superseded
    if (this.aligning === undefined || id > this.aligning.id) {
      // A newer checkpoint supersedes the one being aligned (Flink cancels the older alignment).
      if (this.aligning !== undefined) this.doneUpTo = this.aligning.id;
      this.blocked.fill(false);
      this.aligning = { id, startedAt: this.now(), options };
    }
    this.blocked[channel] = true;
  }

  private checkAligned(): GateNext<P> | undefined {
    const a = this.aligning;
    if (a === undefined) return undefined;
    for (let c = 0; c < this.channels; c++) if (!this.blocked[c] && !this.ended[c]) return undefined;
    this.aligning = undefined;
    this.doneUpTo = a.id;
    this.blocked.fill(false);
    return { kind: "aligned", id: a.id, alignmentMs: Math.max(0, this.now() - a.startedAt), ...(a.options ? { options: a.options } : {}) };
  }
}

/** How a CreditSender puts items on the wire. */
export type Transmit<P> = (item: ChannelItem<P>) => void;

export class CreditSender<P> {
  private credits: number;
  private waiter: (() => void) | undefined;
  private closed = false;
  /** Records sent and not yet consumed by the receiver. */
  inFlightRecords = 0;
  maxInFlightRecords = 0;
  private readonly inFlight: number[] = [];

  constructor(
    private readonly transmit: Transmit<P>,
    /** Buffers the receiver can hold: the initial credit. */
    readonly buffers: number,
  ) {
    this.credits = buffers;
  }

  /** The receiver processed `n` buffers: `n` credits come back. */
  grant(n = 1): void {
    this.credits += n;
    for (let i = 0; i < n; i++) this.inFlightRecords -= this.inFlight.shift() ?? 0;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  get availableCredits(): number {
    return this.credits;
  }

  /** Sends a data buffer, waiting for a credit first (`onWait` is told when it has to). */
  async send(payload: P, records: number, onWait?: (waiting: boolean) => void): Promise<void> {
    if (this.credits <= 0) {
      onWait?.(true);
      while (this.credits <= 0 && !this.closed) await new Promise<void>((resolve) => (this.waiter = resolve));
      onWait?.(false);
    }
    if (this.closed) return;
    this.credits--;
    this.inFlight.push(records);
    this.inFlightRecords += records;
    if (this.inFlightRecords > this.maxInFlightRecords) this.maxInFlightRecords = this.inFlightRecords;
    this.transmit({ kind: "data", payload, records });
  }

  /** An event: in order with the data, without credit. */
  event(item: { kind: "barrier"; id: number; options?: BarrierOptions } | { kind: "end" }): void {
    if (!this.closed) this.transmit(item);
  }

  /** Releases a waiting send (the job is failing or stopping). */
  close(): void {
    this.closed = true;
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

export type TaskTimeState = "busy" | "backPressured" | "idle";

export interface TaskTimes {
  busyTimeMsPerSecond: number;
  backPressuredTimeMsPerSecond: number;
  idleTimeMsPerSecond: number;
}

/** Where one task's time goes, as rates over the last completed window (about one second). */
export class TimeAccount {
  private state: TaskTimeState = "idle";
  private since: number;
  private readonly totals = { busy: 0, backPressured: 0, idle: 0 };
  private windowStart: number;
  private readonly windowTotals = { busy: 0, backPressured: 0, idle: 0 };
  private rates: TaskTimes = { busyTimeMsPerSecond: 0, backPressuredTimeMsPerSecond: 0, idleTimeMsPerSecond: 0 };

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly windowMs = 1000,
  ) {
    this.since = now();
    this.windowStart = this.since;
  }

  /** The task now does `state` (returns the previous one, to switch back). */
  switchTo(state: TaskTimeState): TaskTimeState {
    const prev = this.state;
    if (state === prev) return prev;
    const t = this.now();
    this.totals[prev] += t - this.since;
    this.since = t;
    this.state = state;
    this.roll(t);
    return prev;
  }

  /** Cumulative ms in each state since the start. */
  cumulative(): { busy: number; backPressured: number; idle: number } {
    const t = this.now();
    return { ...this.totals, [this.state]: this.totals[this.state] + (t - this.since) };
  }

  /** The per-second rates of the last completed window (closing the current one when it is due). */
  perSecond(): TaskTimes {
    this.roll(this.now());
    return this.rates;
  }

  private roll(t: number): void {
    const elapsed = t - this.windowStart;
    if (elapsed < this.windowMs) return;
    const c = this.cumulative();
    const d = { busy: c.busy - this.windowTotals.busy, backPressured: c.backPressured - this.windowTotals.backPressured, idle: c.idle - this.windowTotals.idle };
    const scale = 1000 / elapsed;
    this.rates = {
      busyTimeMsPerSecond: Math.round(d.busy * scale),
      backPressuredTimeMsPerSecond: Math.round(d.backPressured * scale),
      idleTimeMsPerSecond: Math.round(d.idle * scale),
    };
    Object.assign(this.windowTotals, c);
    this.windowStart = t;
  }
}
