// When a job packs its changed heap state ahead of the next checkpoint (LocalJob.materialize): while
// it waits for input, at most every MATERIALIZE_EVERY_MS. Shared by the driver and the keyed subtasks.

/**
 * Each materialization copies the packed bytes of every key group it touches, so doing it after
 * every batch would copy the state over and over; at this pace a barrier is left with at most this
 * long's changes to pack.
 */
const MATERIALIZE_EVERY_MS = 50;

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

  /** The state was just packed: by a materialization or a checkpoint's snapshot. */
  packed(): void {
    this.last = performance.now();
    this.changed = false;
  }
}
