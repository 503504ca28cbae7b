// State larger than memory (issue 4, "prove it with a heap limit smaller than the state"): the real
// `keyflow run`, in a child Node limited to a 96 MB heap, over a file of a million distinct cards
// through keyBy -> topK (four state tables per card, no timers). On the disk backend it finishes
// with every card's output and a final checkpoint whose state alone (MessagePack, smaller than its
// heap form) is larger than the heap limit; on the heap backend the same run dies out of memory.
// Slow (about a minute of CPU), so it lives with the integration tests; it needs no service.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync, createReadStream } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { KEYFLOW_BIN } from "../../test/run-cli";
import { topKPipeline } from "./testing";

const HEAP_MB = 96;
const CARDS = 1_000_000;
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-beyond-memory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const card = (i: number) => `card-${i.toString(36).padStart(6, "0")}-${((i * 2654435761) % 4294967296).toString(16)}`;

function writeInput(): void {
  const fd = openSync(path.join(dir, "in.jsonl"), "w");
  let buf: string[] = [];
  for (let i = 0; i < CARDS; i++) {
    buf.push(JSON.stringify({ card: card(i), merchant: `merchant-${i % 13}`, ts: 1_700_000_000_000 + i }));
    if (buf.length === 10_000) {
      writeSync(fd, buf.join("\n") + "\n");
      buf = [];
    }
  }
  if (buf.length > 0) writeSync(fd, buf.join("\n") + "\n");
  closeSync(fd);
  const doc = topKPipeline({ name: "beyond-memory", input: "in.jsonl", output: "out/top.jsonl", late: "out/late.jsonl" });
  writeFileSync(path.join(dir, "pipeline.json"), JSON.stringify(doc));
}

function runLimited(backend: "heap" | "disk"): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  rmSync(path.join(dir, "out"), { recursive: true, force: true });
  rmSync(path.join(dir, `ck-${backend}`), { recursive: true, force: true });
  const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, KEYFLOW_BIN, "run", path.join(dir, "pipeline.json"), "--state-backend", backend, "--checkpoint-dir", path.join(dir, `ck-${backend}`)], {
    env: { ...process.env, KEYFLOW_LOG_LEVEL: "warn", KEYFLOW_STATE_DIR: path.join(dir, "stores") },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-20_000)));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe(`state larger than a ${HEAP_MB} MB heap`, () => {
  it("finishes on the disk backend with correct output; the heap backend runs out of memory", { timeout: 900_000 }, async () => {
    writeInput();

    const disk = await runLimited("disk");
    expect(disk.stderr).not.toMatch(/out of memory/);
    expect(disk.code).toBe(0);
    // topK emits each card's ranking once, on its only payment.
    let lines = 0;
    const rl = createInterface({ input: createReadStream(path.join(dir, "out", "top.jsonl")) });
    for await (const line of rl) {
      const r = JSON.parse(line) as { key: string; topK: Array<{ value: string; count: number }>; total: number };
      if (lines % 99_991 === 0) {
        expect(r.key).toBe(card(lines));
        expect(r.topK).toEqual([{ value: `merchant-${lines % 13}`, count: 1 }]);
        expect(r.total).toBe(1);
      }
      lines++;
    }
    expect(lines).toBe(CARDS);
    // The final checkpoint holds every card: its state alone is larger than the whole heap.
    const ck = path.join(dir, "ck-disk");
    const last = readdirSync(ck).filter((n) => n.startsWith("chk-")).sort().at(-1)!;
    const meta = JSON.parse(readFileSync(path.join(ck, last, "_metadata.json"), "utf8")) as { stateBytes: number; disk: { files: Array<{ entries: number }> } };
    expect(meta.disk.files.reduce((n, f) => n + f.entries, 0)).toBeGreaterThanOrEqual(CARDS);
    expect(meta.stateBytes).toBeGreaterThan(HEAP_MB * 1024 * 1024);

    const heap = await runLimited("heap");
    expect(heap.code).not.toBe(0);
    expect(heap.stderr).toMatch(/JavaScript heap out of memory/);
  });
});
