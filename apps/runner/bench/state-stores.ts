// Which embedded store backs the disk state backend: puts, synchronous gets and a full scan (the
// cost of a full snapshot) at 1 M keys, for lmdb (the runner's dependency) and classic-level
// (LevelDB; measured when installed, e.g. `npm i classic-level@3` in a scratch folder given as
// --classic-level DIR). Its figures are in the commit that chose LMDB.
//   node --import tsx apps/runner/bench/state-stores.ts [--keys 1000000] [--classic-level /tmp/clbench]
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { open } from "lmdb";

const { values } = parseArgs({ options: { keys: { type: "string", default: "1000000" }, "classic-level": { type: "string" } } });
const N = Number(values.keys);
const BATCH = 10_000;
const GETS = 200_000;
const value = (i: number) => ({ count: i % 97, sum: i * 1.5, last: 1_764_000_000_000 + i });
const keyOf = (i: number) => `acct-${(i * 2654435761) % 4294967296}`;
const rate = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString("en")}/s`;

function lmdbBench(dir: string): void {
  const db = open({ path: dir, compression: false });
  let t = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    db.transactionSync(() => {
      for (let j = i; j < Math.min(N, i + BATCH); j++) db.putSync(keyOf(j), value(j));
    });
  }
  const putMs = performance.now() - t;
  t = performance.now();
  let found = 0;
  for (let i = 0; i < GETS; i++) if (db.get(keyOf((i * 7919) % N)) !== undefined) found++;
  const getMs = performance.now() - t;
  t = performance.now();
  let scanned = 0;
  for (const _ of db.getRange({ snapshot: true })) scanned++;
  const scanMs = performance.now() - t;
  console.log(`lmdb 3.5.6: ${N} puts in ${BATCH}-key transactions ${rate(N, putMs)}; sync gets ${rate(GETS, getMs)} (${found} found); full scan ${scanned} entries in ${Math.round(scanMs)} ms`);
  db.close();
}

async function classicLevelBench(dir: string, from: string): Promise<void> {
  const req = createRequire(path.join(from, "package.json"));
  const { ClassicLevel } = req("classic-level") as {
    ClassicLevel: new (p: string, o: { valueEncoding: string }) => {
      open(): Promise<void>;
      batch(ops: Array<{ type: "put"; key: string; value: unknown }>): Promise<void>;
      getSync(k: string): unknown;
      iterator(): AsyncIterable<[string, unknown]>;
      close(): Promise<void>;
    };
  };
  const db = new ClassicLevel(dir, { valueEncoding: "json" });
  await db.open();
  let t = performance.now();
  for (let i = 0; i < N; i += BATCH) {
    const ops: Array<{ type: "put"; key: string; value: unknown }> = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) ops.push({ type: "put", key: keyOf(j), value: value(j) });
    await db.batch(ops);
  }
  const putMs = performance.now() - t;
  t = performance.now();
  let found = 0;
  for (let i = 0; i < GETS; i++) if (db.getSync(keyOf((i * 7919) % N)) !== undefined) found++;
  const getMs = performance.now() - t;
  t = performance.now();
  let scanned = 0;
  for await (const _ of db.iterator()) scanned++;
  const scanMs = performance.now() - t;
  console.log(`classic-level: ${N} puts in ${BATCH}-key batches ${rate(N, putMs)}; sync gets ${rate(GETS, getMs)} (${found} found); full scan ${scanned} entries in ${Math.round(scanMs)} ms`);
  await db.close();
}

const root = mkdtempSync(path.join(tmpdir(), "keyflow-state-stores-"));
try {
  lmdbBench(path.join(root, "lmdb"));
  if (values["classic-level"]) await classicLevelBench(path.join(root, "level"), values["classic-level"]);
  else console.log("classic-level: skipped (give --classic-level DIR with classic-level installed there)");
} finally {
  rmSync(root, { recursive: true, force: true });
}
