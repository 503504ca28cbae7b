// The sliced window's state on a backend that adopts tables (the heap): keys -> slots (KeySlots)
// and each slot's SliceState, adopted as the "slices" value state in the form its handles store.
//
// Why not the heap table's Map: over 100 k keys its lookups are dependent cache misses (bucket,
// entry, the colliding key) that do not overlap from one key to the next, half the hopping row's
// time. Here a chunk's hashes, table positions, slot keys and rows are each a loop of independent
// loads. Timers stay the host's (one per key, as on the handle path), so snapshots hold the same
// state and timers whichever storage wrote them.
import type { Key, RuntimeContext } from "../../core/api";
import { ValueWriter } from "../../core/snapshot-codec";
import { ChangeReportingSlotTableView, estimateBytes, KeySlots } from "../../core/state";
import type { RunningTotals } from "./running-totals";
import type { SliceState } from "./slice-state";

/** Above this many live keys, estimatedBytes() samples the slice arrays evenly. */
const BYTES_SAMPLE = 2_000;

export class SliceTable {
  readonly slots = new KeySlots();
  /** Each slot's state; undefined for a free slot. */
  readonly rows: Array<SliceState | undefined> = [];
  /** lookUp()'s scratch, by position in the chunk: the keys' hashes. */
  private hashes = new Int32Array(0);
  /** What lookUp()'s stages read, kept so that the compiler keeps the reads. */
  private touched = 0;

  private readonly view: ChangeReportingSlotTableView;

  constructor(
    name: string,
    adopt: NonNullable<RuntimeContext["adoptState"]>,
    /** The slots' running totals, for additive aggregates: forgotten here when a slot is freed or restored. */
    readonly totals: RunningTotals | undefined,
  ) {
    // Change-reporting: a checkpoint then packs only the keys whose slices changed since the last
    // one, as it did when the slices were in the heap backend's own table; rebuilding the columns
    // whole made a snapshot of 100 k keys with 1 % changed three times slower.
    // Checkpoints write a row of numbers straight into its bytes (msgpackr's, without its per-value
    // set-up); a row holding anything else (distinctCount's sets) is packed by msgpackr.
    const writer = new ValueWriter();
    this.view = adopt(
      new ChangeReportingSlotTableView(name, "value", this.slots, (s) => this.rows[s], (entries) => this.load(entries), () => this.estimatedBytes(), (s) => {
        const st = this.rows[s];
        return st === undefined ? undefined : writer.numberArray(st);
      }),
    );
  }

  /** The key's slices were changed in place (a snapshot packs them again); add, delete and replace report themselves. */
  changed(key: Key): void {
    this.view.changed(key);
  }

  /** Gives the key at `slot` a new array of slices. */
  replace(key: Key, slot: number, st: SliceState): void {
    this.rows[slot] = st;
    this.view.changed(key);
  }

  /** The key's slot, or -1 (then add() may give it one). */
  find(key: Key): number {
    return this.slots.find(key);
  }

  /** Gives the key the last find() missed a slot holding st (nothing may change the slots in between). */
  add(key: Key, st: SliceState): number {
    const slot = this.slots.addMissing(key);
    this.rows[slot] = st;
    this.view.changed(key);
    return slot;
  }

  delete(slot: number): void {
    this.view.changed(this.slots.keyAt(slot) as Key);
    this.slots.delete(slot);
    this.rows[slot] = undefined;
    this.totals?.forget(slot);
  }

  /** slotOf[i] = the slot of keys[i] (or -1) for i < n, after KeySlots.prefetch's stages, so that the misses of different keys overlap. */
  lookUp(keys: readonly Key[], n: number, slotOf: Int32Array): void {
    if (this.hashes.length < n) this.hashes = new Int32Array(n);
    const hashes = this.hashes;
    const slots = this.slots;
    this.touched = slots.prefetch(keys, n, hashes, slotOf);
    for (let i = 0; i < n; i++) slotOf[i] = slots.findHashed(keys[i] as Key, hashes[i] as number);
  }

  private load(entries: ReadonlyArray<readonly [Key, unknown]>): void {
    for (const [key, st] of entries) {
      const slot = this.slots.findOrAdd(key);
      this.rows[slot] = st as SliceState;
      this.totals?.forget(slot);
    }
  }

  /** The lookup's bytes, a pointer per slot, and the slice arrays (sampled over many keys). */
  private estimatedBytes(): number {
    const live = this.slots.size;
    const high = this.slots.highWater;
    const step = live > BYTES_SAMPLE ? high / BYTES_SAMPLE : 1;
    let sampled = 0;
    let bytes = 0;
    for (let s = 0; s < high; s += step) {
      const st = this.rows[Math.floor(s)];
      if (st === undefined) continue;
      bytes += estimateBytes(st);
      sampled++;
    }
    const arrays = sampled === 0 ? 0 : Math.round((bytes / sampled) * live);
    return this.slots.bytes() + 4 * this.rows.length + arrays + (this.totals?.bytes() ?? 0);
  }
}
