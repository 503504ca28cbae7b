// The floor under the engine's rows: the same per-record hash-map work with no engine around it,
// over the same random keys, so that docs/BENCHMARKS.md can say how far each row is from what one
// thread of this machine does at all. `node --import tsx bench/floor.ts` (about a minute).
import os from "node:os";
import { prng } from "./driver";

interface Floor {
  name: string;
  /** Runs `events` records (key indexes in `seq`, or fresh `ids`); timed by the caller. */
  run(keys: readonly string[], seq: Int32Array, ids: readonly string[], events: number): void;
}

const floors: Floor[] = [
  {
    name: "Map<string, number> increment (a keyed count reduced to its lookup)",
    run(keys, seq, _ids, events) {
      const m = new Map<string, number>();
      for (let i = 0; i < events; i++) {
        const k = keys[seq[i] as number] as string;
        m.set(k, (m.get(k) ?? 0) + 1);
      }
    },
  },
  {
    name: "Map<string, number[]> in-place update (the window operators' layout, no engine)",
    run(keys, seq, _ids, events) {
      const m = new Map<string, number[]>();
      for (let i = 0; i < events; i++) {
        const k = keys[seq[i] as number] as string;
        const a = m.get(k);
        if (a === undefined) m.set(k, [0, 0, 1, 1]);
        else a[3] = (a[3] as number) + 1;
      }
    },
  },
  {
    name: "Map get, set and delete of fresh ids, `keys` of them live (dedup reduced to its map)",
    run(keys, _seq, ids, events) {
      const m = new Map<string, number>();
      for (let i = 0; i < events; i++) {
        const id = ids[i] as string;
        if (m.get(id) === undefined) m.set(id, i);
        if (i >= keys.length) m.delete(ids[i - keys.length] as string);
      }
    },
  },
];

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

for (const [keyCount, events] of [
  [100_000, 10_000_000],
  [1_000_000, 6_000_000],
] as const) {
  const keys = Array.from({ length: keyCount }, (_, i) => `card-${i}`);
  const rnd = prng(42);
  const seq = new Int32Array(events);
  for (let i = 0; i < events; i++) seq[i] = Math.floor(rnd() * keyCount);
  const ids = Array.from({ length: events }, (_, i) => `evt-${i}`);
  for (const f of floors) {
    const rates: number[] = [];
    f.run(keys, seq, ids, Math.min(events, 1_000_000)); // warm-up
    for (let r = 0; r < 3; r++) {
      const t0 = process.hrtime.bigint();
      f.run(keys, seq, ids, events);
      rates.push(events / (Number(process.hrtime.bigint() - t0) / 1e9));
    }
    const m = (x: number) => `${(x / 1e6).toFixed(2)} M/s`;
    console.log(`${keyCount.toLocaleString("en")} keys, ${f.name}: median ${m(median(rates))} (${rates.map(m).join(", ")})`);
  }
}
console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} at the end`);
