// `npm run bench -w packages/operators`: runs every registered workload single-threaded on heap
// state with pre-built records, reports the median events/s of several runs and the live state
// per key, and prints a markdown table (for docs/BENCHMARKS.md). The script gives node the flags the
// runner's processes run the engine with (apps/runner/src/process-flags.ts; a test keeps them equal).
//   options: --runs N (default 3), --only id1,id2, --per-record (one processElement per record
//   instead of the records between two watermarks in one processBatch), --fresh (records built a
//   chunk at a time outside the clock instead of a replayed pool), --pool N (every workload's pool
//   capped at N records): see feed in ./driver
import os from "node:os";
import { feed } from "./driver";
import { workloads } from "./workloads";

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const runs = Math.max(3, Number(opt("runs") ?? 3));
const only = opt("only")?.split(",");
feed.batches = !args.includes("--per-record");
feed.fresh = args.includes("--fresh");
const pool = opt("pool");
if (pool !== undefined) {
  feed.pool = Number(pool);
  if (!Number.isInteger(feed.pool) || feed.pool < 1) throw new Error(`--pool ${pool}: expected a whole number of records, at least 1`);
}

const fmt = (n: number): string => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n.toFixed(0));
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

const rows: string[] = [];
for (const w of workloads) {
  if (only && !only.includes(w.id)) continue;
  const prepared = w.prepare();
  // One untimed-for-the-table warm-up run lets V8 optimize the hot path first; it also times a full snapshot.
  const { snapshot } = prepared.run(false, true);
  const rates: number[] = [];
  let state: ReturnType<typeof prepared.run>["state"];
  let outputs = 0;
  for (let i = 0; i < runs; i++) {
    const r = prepared.run(i === runs - 1);
    rates.push(r.events / r.seconds);
    outputs = r.outputs;
    if (r.state) state = r.state;
  }
  const perKey = (b: number | undefined): string => (b === undefined || !state || state.keys === 0 ? "n/a" : `${Math.round(b / state.keys)} B`);
  const row = `| ${w.title} | ${fmt(prepared.events)} | ${fmt(median(rates))}/s | ${rates.map((r) => fmt(r)).join(", ")} | ${fmt(outputs)} | ${state ? fmt(state.keys) : "n/a"} | ${perKey(state?.heapBytes)} | ${perKey(state?.estimatedBytes)} | ${snapshot ? `${snapshot.ms.toFixed(0)} ms, ${(snapshot.bytes / 1e6).toFixed(1)} MB` : "n/a"} |`;
  rows.push(row);
  console.error(`${w.id}: ${row}`);
}

const load = os.loadavg().map((l) => l.toFixed(1)).join(" ");
const flags = process.execArgv.filter((a, i, all) => a !== "--import" && all[i - 1] !== "--import").join(" ");
console.log(`\nnode ${process.version} (${flags || "no flags"}), ${os.cpus()[0]?.model ?? "unknown cpu"} (${os.cpus().length} cpus), ${os.platform()} ${os.arch()}, load average ${load} at the end; single thread, heap state, records ${feed.fresh ? "built a chunk at a time outside the clock" : `pre-built (a replayed pool${feed.pool !== undefined ? ` capped at ${feed.pool}` : ""})`}, fed ${feed.batches ? "in batches between watermarks" : "one by one"}; median of ${runs} runs after a warm-up\n`);
console.log("| workload | events | median | runs | outputs | live keys | heap / key | estimate / key | full snapshot |");
console.log("|---|---:|---:|---|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(r);
console.log(`\nheap / key: V8 heap plus ArrayBuffer growth over the run, measured before end of input (after GC), divided by live keys; needs --expose-gc. estimate / key: the engine's own state size estimate (metrics). full snapshot: OperatorHost.snapshot() of the live state before end of input, once, on the warm-up run (a first checkpoint: every key packed). Workloads:`);
for (const w of workloads) if (!only || only.includes(w.id)) console.log(`- ${w.title}: ${w.description}`);
