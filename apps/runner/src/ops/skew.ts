// Skew of a parallel job's keyed part, measured where records are routed to their subtask: per
// keyed operator and subtask, the records routed there and a Space-Saving sketch of its hottest
// keys (bounded memory, ./heavy-hitters). A subtask carrying more than twice the mean is flagged:
// one key (or a few) dominate, and salting the key (keyBy { salt }) spreads it.
//
// This runs on the exchange's hot path, so records are counted exactly but only about one in
// SAMPLE_EVERY goes into the sketch (weighted by SAMPLE_EVERY; a fixed-seed xorshift picks them, so
// a key pattern that repeats with the stride cannot hide). A key above 1/SKETCH_CAPACITY of a
// subtask's records still stands out; the counts shown are estimates, and say so.
import { SpaceSaving, type HeavyHitter } from "./heavy-hitters";

/** Keys kept per subtask sketch. */
export const SKETCH_CAPACITY = 32;
/** About one record in this many is offered to the sketch. */
export const SAMPLE_EVERY = 16;
/** A subtask above this multiple of the mean load is skewed (the seeds' checklist item 10). */
export const SKEW_FACTOR = 2;

export interface OperatorSkew {
  node: string;
  /** Records routed to each subtask. */
  records: number[];
  mean: number;
  /** Subtasks carrying more than SKEW_FACTOR × the mean. */
  skewedSubtasks: number[];
  /** The hottest keys over all subtasks, with the subtask that owns each. */
  hotKeys: Array<HeavyHitter & { subtask: number; share: number }>;
}

export class KeySkew {
  private readonly perNode = new Map<string, { records: number[]; sketches: SpaceSaving[] }>();
  private rng = 0x9e3779b9;

  /** `sampleEvery` 1 offers every record to the sketches (tests). */
  constructor(
    private readonly parallelism: number,
    private readonly sampleEvery = SAMPLE_EVERY,
  ) {}

  offer(node: string, subtask: number, key: string): void {
    let n = this.perNode.get(node);
    if (!n) {
      n = { records: new Array<number>(this.parallelism).fill(0), sketches: Array.from({ length: this.parallelism }, () => new SpaceSaving(SKETCH_CAPACITY)) };
      this.perNode.set(node, n);
    }
    n.records[subtask] = (n.records[subtask] ?? 0) + 1;
    if (this.sampleEvery > 1) {
      let x = this.rng;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.rng = x >>> 0;
      if (this.rng % this.sampleEvery !== 0) return;
    }
    n.sketches[subtask]?.offer(key, this.sampleEvery);
  }

  report(topK = 10): OperatorSkew[] {
    return [...this.perNode].map(([node, n]) => {
      const total = n.records.reduce((a, b) => a + b, 0);
      const mean = total / this.parallelism;
      const hotKeys = n.sketches
        // A key lives in one subtask (its key group's owner), so the subtasks' keys never overlap.
        .flatMap((s, subtask) => s.top(topK).map((h) => ({ ...h, subtask, share: total > 0 ? h.count / total : 0 })))
        .sort((a, b) => b.count - a.count || a.subtask - b.subtask)
        .slice(0, topK);
      return { node, records: [...n.records], mean, skewedSubtasks: skewedSubtasks(n.records), hotKeys };
    });
  }
}

/** The subtasks carrying more than SKEW_FACTOR × the mean load (none while nothing flowed). */
export function skewedSubtasks(records: readonly number[]): number[] {
  const total = records.reduce((a, b) => a + b, 0);
  if (total === 0 || records.length < 2) return [];
  const mean = total / records.length;
  return records.flatMap((r, i) => (r > SKEW_FACTOR * mean ? [i] : []));
}
