// Throughput of a file pipeline (source.file → filter → keyBy → velocity + tumbling window → two
// sink.file) at parallelism 1 and N, in-process through the JobDriver, per exchange codec.
//   node --import tsx apps/runner/src/exec/bench.ts [records=200000] [parallelisms=1,2] [codecs=clone,msgpack] [runs=3]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { PipelineDocument } from "@keyflow/operators";
import { validPipeline } from "@keyflow/operators/testing";
import { readEnv } from "../env";
import { createJobDriver } from "../job/create";
import { createLogger } from "../log";
import type { CodecName } from "./wire";

export function benchPipeline(parallelism: number): PipelineDocument {
  const raw = {
    format: "keyflow.pipeline/v1",
    name: "bench",
    settings: { checkpointIntervalMs: 60_000, parallelism },
    nodes: [
      { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 50 } },
      { id: "valid", type: "filter", params: { expression: "amount >= 0" } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "vel", type: "velocity", params: { threshold: 3, windowMs: 1000 } },
      { id: "win", type: "window.tumbling", params: { sizeMs: 5000, aggregate: { op: "sum", field: "amount" } } },
      { id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } },
      { id: "sums", type: "sink.file", params: { path: "out/sums.jsonl" } },
    ],
    edges: [
      { from: "payments", to: "valid" },
      { from: "valid", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "byCard", to: "win" },
      { from: "vel", to: "alerts" },
      { from: "win", to: "sums" },
    ],
  };
  return validPipeline(raw);
}

/** `n` JSON lines of ~100 bytes over `cards` keys, slightly out of order, a malformed line every 1999, a late one every 997. */
export function benchRecords(n: number, cards = 5000): string {
  const lines: string[] = [];
  let s = 1;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  for (let i = 0; i < n; i++) {
    if (i % 1999 === 0) {
      lines.push("{bad");
      continue;
    }
    // Every 997th record is 20 s late: the keyed nodes send it to their (unconnected) late port.
    const late = i % 997 === 500 ? 20_000 : 0;
    lines.push(JSON.stringify({ id: `t${i}`, card: `c${Math.floor(rnd() * cards)}`, amount: Math.floor(rnd() * 1000) - 10, ts: 1767225600000 + i * 10 - Math.floor(rnd() * 40) - late }));
  }
  return lines.join("\n") + "\n";
}

async function main(): Promise<void> {
  const [nArg, pArg, cArg, runsArg] = process.argv.slice(2);
  const n = Number(nArg ?? 200_000);
  const ps = (pArg ?? "1,2").split(",").map(Number);
  const codecs = (cArg ?? "clone,msgpack").split(",") as CodecName[];
  const runs = Number(runsArg ?? 3);
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-bench-"));
  writeFileSync(path.join(dir, "payments.jsonl"), benchRecords(n));
  const env = readEnv();
  const log = createLogger(process.env.BENCH_VERBOSE ? "debug" : "warn");
  for (const p of ps) {
    for (const c of p === 1 ? ["-" as const] : codecs) {
      const times: number[] = [];
      for (let r = 0; r < runs; r++) {
        rmSync(path.join(dir, "out"), { recursive: true, force: true });
        const t0 = performance.now();
        const driver = createJobDriver({ doc: benchPipeline(p), jobId: "bench", baseDir: dir, env, log, ...(c !== "-" ? { exchange: { codec: c, bufferRecords: Number(process.env.BENCH_BUFFER ?? 1024), buffersPerChannel: Number(process.env.BENCH_CREDITS ?? 8) } } : {}) });
        await driver.run();
        times.push(performance.now() - t0);
        if (process.env.BENCH_VERBOSE) for (const t of driver.subtaskMetrics()) console.log(`  ${t.task}[${t.subtask}] busy ${t.totals.busy.toFixed(0)} bp ${t.totals.backPressured.toFixed(0)} idle ${t.totals.idle.toFixed(0)} ms, max queued ${t.maxQueuedRecords}`);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      console.log(`p=${p} codec=${c}: median ${median.toFixed(0)} ms of ${runs} (${times.map((t) => t.toFixed(0)).join(", ")}), ${Math.round(n / (median / 1000)).toLocaleString("en")} records/s`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
