// Checkpoint duration and size against state size, heap and disk backends (docs/BENCHMARKS.md,
// "Checkpoints"). Each configuration runs in its own Node process (a heap that does not fit is a
// measured failure, not a crashed bench):
//   node --import tsx apps/runner/bench/checkpoint.ts [--keys 1000000,10000000] [--runs 3] [--job-keys 20000,100000]
// 1. job: a LocalJob (keyBy -> topK, four state tables per card) on the heap backend with
//    --job-keys cards; each checkpoint is the driver's: job.snapshot() then the fsynced write of
//    chk-<id> through DirectoryCheckpointStore (the <100 ms target for state under 10 MB), after
//    1 % of the cards changed since the previous one.
// 2. state: --keys keys of ~100-byte values in one table; a full checkpoint, then `runs` checkpoints
//    after 1 % of the keys changed: the heap backend writes everything again (packing only the
//    changed values, the rest kept packed from the last checkpoint), the disk backend a delta.
//    Duration (wall and CPU) and bytes written per checkpoint; medians over the runs.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { encodeSnapshot, HeapKeyedStateBackend, LocalJob, type KeyedStateBackend } from "@keyflow/operators";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, type CheckpointMeta } from "../src/job/checkpoints";
import { DiskStateStore } from "../src/state/disk-store";
import { topKPipeline } from "../src/state/testing";

const { values } = parseArgs({
  options: {
    keys: { type: "string", default: "1000000" },
    "job-keys": { type: "string", default: "20000,50000,100000,150000" },
    runs: { type: "string", default: "3" },
    child: { type: "string" },
    backend: { type: "string" },
    n: { type: "string" },
  },
});
const RUNS = Number(values.runs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

function meta(id: number, stateBytes: number): CheckpointMeta {
  return { format: CHECKPOINT_FORMAT, id, jobId: "bench", pipeline: { name: "bench", digest: "-" }, createdAt: new Date().toISOString(), processingTime: 0, stateBytes, sources: {}, sinks: {} };
}

/** Wall and CPU ms of `fn`. */
async function timed<T>(fn: () => Promise<T> | T): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const c = process.cpuUsage(c0);
  return { value, wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
}

// ---- 1. the job-level heap checkpoint ------------------------------------------------------------

const jobDoc = topKPipeline({ name: "bench-checkpoint", input: "in.jsonl", output: "out.jsonl" });

async function jobChild(n: number): Promise<void> {
  const job = LocalJob.create(jobDoc);
  for (let i = 0; i < n; i++) {
    job.pushRaw("src", JSON.stringify({ card: `card-${i}`, merchant: `m${i % 13}`, ts: 1_700_000_000_000 + i }), { partition: 0 });
    if (i % 1000 === 999) job.drain();
  }
  job.drain();
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-bench-ck-"));
  const store = new DirectoryCheckpointStore(dir, 3);
  await store.acquire();
  const rows: Array<{ snap: number; snapCpu: number; write: number; total: number; bytes: number }> = [];
  let ts = 1_700_000_000_000 + n;
  try {
    for (let id = 1; id <= RUNS + 1; id++) {
      // Between two checkpoints 1 % of the cards see a payment at a new merchant, as in a running job.
      for (let i = 0; i < n / 100; i++) job.pushRaw("src", JSON.stringify({ card: `card-${(i * 7919 + id * 31) % n}`, merchant: `m${(i + id) % 17}`, ts: ts++ }), { partition: 0 });
      job.drain();
      const t0 = performance.now();
      const snap = await timed(() => job.snapshot());
      const write = await timed(() => store.write(meta(id, snap.value.byteLength), snap.value));
      await store.markCommitted(id);
      if (id > 1) rows.push({ snap: snap.wallMs, snapCpu: snap.cpuMs, write: write.wallMs, total: performance.now() - t0, bytes: snap.value.byteLength });
    }
  } finally {
    await store.release();
    rmSync(dir, { recursive: true, force: true });
  }
  const m = (f: (r: (typeof rows)[number]) => number) => median(rows.map(f)).toFixed(1);
  console.log(`job heap ${n} cards, ${mb(rows[0]!.bytes)}: checkpoint ${m((r) => r.total)} ms (snapshot ${m((r) => r.snap)} ms wall / ${m((r) => r.snapCpu)} ms CPU, fsynced write ${m((r) => r.write)} ms)`);
}

// ---- 2. the state-level full and incremental checkpoints ------------------------------------------

const valueOf = (i: number, round: number) => ({ count: i % 97, sum: i * 1.5 + round, last: 1_764_000_000_000 + i, merchant: `merchant-${i % 13}`, round });
const keyOf = (i: number) => `card-${((i * 2654435761) % 4294967296).toString(16).padStart(8, "0")}-${i}`;

async function stateChild(backend: "heap" | "disk", n: number): Promise<void> {
  const root = mkdtempSync(path.join(tmpdir(), "keyflow-bench-state-"));
  const store = new DirectoryCheckpointStore(path.join(root, "ck"), 3);
  await store.acquire();
  const disk = backend === "disk" ? new DiskStateStore({ dir: path.join(root, "store"), label: "bench" }) : undefined;
  const be: KeyedStateBackend = disk ? disk.backendFor("node") : new HeapKeyedStateBackend();
  const table = be.table<ReturnType<typeof valueOf>>("state", "value");
  try {
    const fill = await timed(() => {
      for (let i = 0; i < n; i++) table.put(keyOf(i), valueOf(i, 0));
    });
    const checkpoint = async (id: number) => {
      const t = await timed(async () => {
        if (disk) {
          const chain = disk.writeCheckpoint(id, path.join(root, "ck", "shared"), "../shared", "b");
          const written = chain.files.filter((f) => f.checkpoint === id).reduce((s, f) => s + f.bytes, 0);
          await store.write({ ...meta(id, written), disk: chain }, new Uint8Array(0));
          return { written, total: chain.files.reduce((s, f) => s + f.bytes, 0), kind: chain.files.at(-1)!.kind };
        }
        // What an operator's snapshot holds of it (core/host.ts): the heap table's packed columns.
        const bytes = encodeSnapshot(be.snapshotColumns?.(128) ?? be.snapshot());
        await store.write(meta(id, bytes.byteLength), bytes);
        return { written: bytes.byteLength, total: bytes.byteLength, kind: "full" };
      });
      await store.markCommitted(id);
      return t;
    };
    const first = await checkpoint(1);
    const inc: Array<Awaited<ReturnType<typeof checkpoint>>> = [];
    for (let r = 1; r <= RUNS; r++) {
      for (let i = r; i < n; i += 100) table.put(keyOf(i), valueOf(i, r)); // 1 % of the keys change
      inc.push(await checkpoint(r + 1));
    }
    const m = (f: (x: (typeof inc)[number]) => number) => median(inc.map(f));
    console.log(
      `state ${backend} ${n.toLocaleString("en")} keys (filled in ${(fill.wallMs / 1000).toFixed(1)} s): full checkpoint ${first.wallMs.toFixed(0)} ms (CPU ${first.cpuMs.toFixed(0)} ms), ${mb(first.value.written)}; ` +
        `after 1 % changed: ${m((x) => x.wallMs).toFixed(0)} ms (CPU ${m((x) => x.cpuMs).toFixed(0)} ms), ${mb(m((x) => x.value.written))} written (${inc.map((x) => x.value.kind).join(", ")}), ${mb(m((x) => x.value.total))} to restore`,
    );
  } finally {
    disk?.close();
    await store.release();
    rmSync(root, { recursive: true, force: true });
  }
}

// ---- driver: each configuration in a child process -------------------------------------------------

function child(args: string[], heapMb?: number): void {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, [...(heapMb ? [`--max-old-space-size=${heapMb}`] : []), "--import", "tsx", self, ...args, "--runs", String(RUNS)], { encoding: "utf8", maxBuffer: 1 << 24 });
  if (r.status === 0) process.stdout.write(r.stdout);
  else {
    const why = /heap out of memory|Reached heap limit|Allocation failed[^\n]*/.exec(r.stderr)?.[0] ?? r.stderr.trim().split("\n").slice(-3).join(" / ");
    console.log(`${args.join(" ")}: FAILED (exit ${r.status ?? r.signal}): ${why}`);
  }
}

if (values.child === "job") await jobChild(Number(values.n));
else if (values.child === "state") await stateChild(values.backend === "disk" ? "disk" : "heap", Number(values.n));
else {
  console.log(`checkpoint bench: ${RUNS} runs per configuration, medians`);
  for (const n of values["job-keys"].split(",").map(Number)) child(["--child", "job", "--n", String(n)]);
  for (const n of values.keys.split(",").map(Number)) {
    for (const backend of ["heap", "disk"]) child(["--child", "state", "--backend", backend, "--n", String(n)]);
  }
}
