// When a job packs its changed heap state ahead of the next checkpoint (LocalJob.materialize): while
// it waits for input, in a window before the barrier is due. Shared by the driver and the keyed subtasks.

/**
 * Within the window, at most this often: each materialization copies the packed bytes of every key
 * group it touches, so doing it after every batch would copy the state over and over; at this pace
 * a barrier is left with at most this long's changes to pack.
 */
const MATERIALIZE_EVERY_MS = 50;

/**
 * And at most this share of the time: a pass over changes spread across every key group copies the
 * whole packed state (a group is one allocation), which at 1 M keys takes longer than 50 ms, so the
 * next pass waits (1 / share - 1) times as long as the last one took.
 */
const MAX_SHARE = 0.2;

/**
 * Values packed per slice: about 1.5 ms on this project's 2-vCPU VM for W1's velocity windows. A
 * record that arrives while the job materializes waits for one slice, not for the whole (5 to
 * 28 ms at 5 000 records/s, the largest stalls of the event loop after the checkpoint itself).
 */
const SLICE_VALUES = 64;

/**
 * The window's first length, and its shortest. Packing a key ahead only pays when the key does not
 * change again before the barrier: packing all the time, a key updated every two seconds under a
 * 60 s interval was packed thirty times per checkpoint (a fifth of each W1 subtask's time). So the
 * window opens `lead` before the barrier is due, long enough for one pass over everything changed
 * since the last checkpoint to end before it; `lead` doubles after a barrier that came before that
 * pass ended and shrinks by a quarter after one that left it idle for over half the window.
 */
const INITIAL_LEAD_MS = 2_000;
const MIN_LEAD_MS = 500;

export class MaterializePacer {
  private last: number;
  private changed = false;
  /** When the last snapshot was taken (the next barrier is due `intervalMs` later). */
  private snapshotAt: number;
  private lead: number;
  /** When the window's first pass packed everything, if it has. */
  private passEndedAt: number | undefined;
  /** Whether anything was packed ahead since the last snapshot (a window with nothing to do teaches nothing). */
  private packedAhead = false;
  /** Time spent in the slices of the pass under way, and the wait after the last pass (see MAX_SHARE). */
  private passMs = 0;
  private spacing = MATERIALIZE_EVERY_MS;

  /**
   * @param intervalMs the checkpoint interval: barriers are expected that long after the last snapshot
   * @param now a monotonic clock in ms (injected by tests)
   */
  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.last = this.snapshotAt = now();
    this.lead = Math.min(intervalMs, INITIAL_LEAD_MS);
  }

  /** How long before an expected barrier materialization starts (ms). */
  get leadMs(): number {
    return this.lead;
  }

  /** Input was processed: state may have changed since the last materialization or checkpoint. */
  inputProcessed(): void {
    this.changed = true;
  }

  /** Milliseconds until a materialization is due; Infinity when nothing changed since the last. */
  dueInMs(): number {
    if (!this.changed) return Number.POSITIVE_INFINITY;
    const t = this.now();
    return Math.max(0, this.snapshotAt + this.intervalMs - this.lead - t, this.last + this.spacing - t);
  }

  /**
   * Packs one slice of the state changed since the last snapshot; returns whether all of it is
   * packed. Until it is, the materialization stays due, and the caller looks at its input first.
   */
  materializeSlice(job: { materialize(maxValues: number): boolean }): boolean {
    const t0 = this.now();
    const done = job.materialize(SLICE_VALUES);
    this.packedAhead = true;
    const t = this.now();
    this.passMs += t - t0;
    if (done) {
      this.last = t;
      this.changed = false;
      this.passEndedAt ??= t;
      this.spacing = Math.max(MATERIALIZE_EVERY_MS, (this.passMs * (1 - MAX_SHARE)) / MAX_SHARE);
      this.passMs = 0;
    }
    return done;
  }

  /** A checkpoint's snapshot just packed the state: the next barrier is due an interval from now. */
  packed(): void {
    const t = this.now();
    if (this.packedAhead) {
      if (this.passEndedAt === undefined) this.lead = Math.min(this.intervalMs, this.lead * 2);
      else if (t - this.passEndedAt > this.lead / 2) this.lead = Math.max(Math.min(MIN_LEAD_MS, this.intervalMs), this.lead * 0.75);
    }
    this.last = this.snapshotAt = t;
    this.changed = false;
    this.passEndedAt = undefined;
    this.packedAhead = false;
    this.passMs = 0;
  }
}

/**
 * How long before an expected barrier a keyed subtask writes the changes it has so far (see
 * ChangesAheadSchedule); the barrier's snapshot then holds about this long's changes. Long enough
 * for the part's write and fsync (~5 ms for 2 MB here) to be done when the barrier's commit needs it.
 */
const CHANGES_AHEAD_LEAD_MS = 120;

/**
 * When a keyed subtask of a changelog job takes its changes ahead of the barrier: once per interval,
 * CHANGES_AHEAD_LEAD_MS before the next barrier is expected (Flink's changelog backend persists its
 * log continuously, and a checkpoint only flushes the tail). An exactly-once alert waits for the
 * barrier's whole synchronous part: at 10 k records/s a second's changes are ~2 MB per subtask,
 * packed and written with fsync at the barrier; taken ahead, the barrier packs and writes a tenth.
 * Only after a barrier that asked for a changelog snapshot (a chain the part can join), and only
 * when input changed the state since; not under intervals shorter than four leads.
 */
export class ChangesAheadSchedule {
  private due = Number.POSITIVE_INFINITY;
  private changed = false;

  /**
   * @param intervalMs the checkpoint interval: the next barrier is expected that long after the last
   * @param now a monotonic clock in ms (injected by tests)
   */
  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * A barrier was snapshotted, the snapshot started at `at` (the next barrier is expected an
   * interval after that, not after a commit the caller may have waited for); `changelog`: it asked
   * for a changelog snapshot.
   */
  barrier(changelog: boolean, at: number = this.now()): void {
    this.changed = false;
    this.due = changelog && this.intervalMs >= 4 * CHANGES_AHEAD_LEAD_MS ? at + this.intervalMs - CHANGES_AHEAD_LEAD_MS : Number.POSITIVE_INFINITY;
  }

  /** Input was processed: the state may have changed. */
  inputProcessed(): void {
    this.changed = true;
  }

  /** Milliseconds until the changes are due; Infinity when they are not (taken, nothing changed, no chain). */
  dueInMs(): number {
    if (!this.changed || this.due === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
    return Math.max(0, this.due - this.now());
  }

  /** They were taken: none again before the next barrier. */
  taken(): void {
    this.due = Number.POSITIVE_INFINITY;
  }
}
