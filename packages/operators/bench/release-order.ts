// Ordered velocity's release-order sort alone (`node --import tsx bench/release-order.ts` in
// packages/operators): the ~50 and ~90 numbered card keys a millisecond of the 1 M-key bench releases,
// sorted over and over from the CPU caches, so that a change to the sort shows apart from the
// engine's memory stalls and the VM's noise. Prints µs per batch, the median of five rounds.
import { ReleaseOrder } from "../src/operators/velocity/release-order";
import { prng } from "./driver";

const rnd = prng(7);
const batches = Array.from({ length: 40 }, (_, b) => {
  const n = b % 2 === 0 ? 45 + Math.floor(rnd() * 10) : 85 + Math.floor(rnd() * 15);
  return Array.from({ length: n }, () => `card-${Math.floor(rnd() * 1_000_000)}`);
});
const values = Array.from({ length: 128 }, () => ({ amount: 1 }));
const order = new ReleaseOrder();
const rounds: number[] = [];
for (let round = 0; round < 6; round++) {
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < 5_000; r++) for (const keys of batches) order.sort(keys, values, keys.length);
  if (round > 0) rounds.push(Number(process.hrtime.bigint() - t0) / 1e3 / (5_000 * batches.length)); // round 0 warms up
}
rounds.sort((a, b) => a - b);
const keys = batches.reduce((s, b) => s + b.length, 0) / batches.length;
console.log(`release order: ${(rounds[2] as number).toFixed(2)} µs per batch of ${keys.toFixed(0)} keys (median of ${rounds.map((r) => r.toFixed(2)).join(", ")})`);
