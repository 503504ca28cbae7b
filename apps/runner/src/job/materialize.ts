// When a job packs its changed heap state ahead of the next checkpoint (LocalJob.materialize): while
// it waits for input, at most every MATERIALIZE_EVERY_MS. Shared by the driver and the keyed subtasks.

/**
 * Each materialization copies the packed bytes of every key group it touches, so doing it after
 * every batch would copy the state over and over; at this pace a barrier is left with at most this
 * long's changes to pack.
 */
const MATERIALIZE_EVERY_MS = 50;

/**
 * Values packed per slice: about 1.5 ms on this project's 2-vCPU VM for W1's velocity windows. A
 * record that arrives while the job materializes waits for one slice, not for the whole (5 to
 * 28 ms at 5 000 records/s, the largest stalls of the event loop after the checkpoint itself).
 */
const SLICE_VALUES = 64;

export class MaterializePacer {
  private last = performance.now();
  private changed = false;

  /** Input was processed: state may have changed since the last materialization or checkpoint. */
  inputProcessed(): void {
    this.changed = true;
  }

  /** Milliseconds until a materialization is due; Infinity when nothing changed since the last. */
  dueInMs(): number {
    return this.changed ? Math.max(0, this.last + MATERIALIZE_EVERY_MS - performance.now()) : Number.POSITIVE_INFINITY;
  }

  /**
   * Packs one slice of the state changed since the last snapshot; returns whether all of it is
   * packed. Until it is, the materialization stays due, and the caller looks at its input first.
   */
  materializeSlice(job: { materialize(maxValues: number): boolean }): boolean {
    const done = job.materialize(SLICE_VALUES);
    if (done) this.packed();
    return done;
  }

  /** The state was just packed: by a materialization or a checkpoint's snapshot. */
  packed(): void {
    this.last = performance.now();
    this.changed = false;
  }
}
