// A changelog job (its keyed subtasks, in a parallel one) writes its changes ahead of the barrier
// (ChangesAheadSchedule): the next checkpoint lists those parts in the state file's chain, between
// the chain it builds on and its own file. A run resumed from such a checkpoint, at any parallelism, must write the output of an
// uninterrupted run; a part that cannot be written must fail its checkpoint, never be left out of it.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineDocument, SnapshotPieces } from "@keyflow/operators";
import { readEnv } from "../env";
import { createConnectors } from "../io/connectors";
import { longPayments, paced, pacedVelocityPipeline } from "../../test/paced-velocity";
import { createLogger } from "../log";
import { DirectoryCheckpointStore } from "./checkpoints";
import { systemClock } from "./clock";
import { JobDriver } from "./driver";

const pipeline = (parallelism: number) => pacedVelocityPipeline("ahead", { parallelism, retainedCheckpoints: 100_000 });
const payments = (n: number, cards: number) => longPayments(n, cards);

async function run(dir: string, doc: PipelineDocument, o: { pauseMs?: number; checkpoints?: DirectoryCheckpointStore; failed?: string[] } = {}) {
  const log = createLogger("error");
  const inner = createConnectors({ doc, jobId: doc.name, baseDir: dir, env: readEnv(), clock: systemClock, log });
  return new JobDriver({
    jobId: doc.name,
    doc,
    connectors: {
      source: (n) => (o.pauseMs === undefined ? inner.source(n) : paced(o.pauseMs)(inner.source(n))),
      sink: (n) => inner.sink(n),
      deadLetters: () => inner.deadLetters(),
      close: () => inner.close(),
    },
    checkpoints: o.checkpoints ?? new DirectoryCheckpointStore(path.join(dir, "checkpoints"), 100_000),
    clock: systemClock,
    log,
    checkpointIntervalMs: 500,
    onCheckpointFailed: (f) => o.failed?.push(f.reason),
  }).run();
}

const sortedAlerts = (dir: string) => readFileSync(path.join(dir, "out/alerts.jsonl"), "utf8").split("\n").filter(Boolean).sort();

type Meta = { changelog?: { chain: string[] }; tasks?: Array<{ task: string; subtask: number; changelog?: { chain: string[] } }> };
/** Each state file's chain in a checkpoint folder: `state.bin`'s of a single-threaded job, each keyed subtask's of a parallel one. */
function chainsOf(folder: string): Array<{ of: string; chain: string[] }> {
  const meta = JSON.parse(readFileSync(path.join(folder, "_metadata.json"), "utf8")) as Meta;
  if (meta.tasks === undefined) return [{ of: "state.bin", chain: meta.changelog?.chain ?? [] }];
  return meta.tasks.filter((t) => t.task === "keyed").map((t) => ({ of: `task-keyed-${t.subtask}.bin`, chain: t.changelog?.chain ?? [] }));
}
/** A part written ahead, named after its state file: `<suffix>-ahead<n>` for state.bin, `<suffix>-task-keyed-<i>-ahead<n>` for a subtask's. */
const AHEAD = /^\.\.\/shared\/heap-\d{10}-[^-]+(?:-(task-keyed-\d+))?-ahead\d+\.delta$/;
const aheadOf = (f: string) => {
  const m = AHEAD.exec(f);
  return m === null ? undefined : `${m[1] ?? "state"}.bin`;
};

describe("changes written ahead of the barrier (parallel changelog jobs)", () => {
  it.each([1, 2])(
    "are listed in the next checkpoint's chains (parallelism %i), and resuming from one at parallelism 1, 2 or 3 writes the uninterrupted output",
    { timeout: 180_000 },
    async (first) => {
      const records = payments(16_000, 5000);
      const reference = mkdtempSync(path.join(tmpdir(), "keyflow-ahead-ref-"));
      writeFileSync(path.join(reference, "payments.jsonl"), records);
      expect((await run(reference, pipeline(1))).status).toBe("finished");
      const expected = sortedAlerts(reference);
      expect(expected.length).toBeGreaterThan(1000);

      const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ahead-"));
      writeFileSync(path.join(dir, "payments.jsonl"), records);
      const failed: string[] = [];
      expect((await run(dir, pipeline(first), { pauseMs: 150, failed })).status).toBe("finished");
      expect(failed).toEqual([]);
      expect(sortedAlerts(dir)).toEqual(expected);

      const ckpt = path.join(dir, "checkpoints");
      const folders = readdirSync(ckpt).filter((n) => n.startsWith("chk-")).sort();
      // Each part is listed by its own state file's chain, after the files it builds on, first by one checkpoint only.
      const withAhead = folders.filter((n) => n !== folders.at(-1) && chainsOf(path.join(ckpt, n)).some((c) => c.chain.some((f) => aheadOf(f) !== undefined)));
      expect(withAhead.length).toBeGreaterThan(2);
      const listed = new Map<string, string>();
      for (const n of folders) {
        for (const { of, chain } of chainsOf(path.join(ckpt, n))) {
          chain.forEach((f, i) => {
            const owner = aheadOf(f);
            if (owner === undefined) return;
            expect(owner).toBe(of);
            expect(i).toBeGreaterThan(0);
            const firstListed = listed.get(f);
            if (firstListed === undefined) listed.set(f, n);
            else expect(n > firstListed).toBe(true);
          });
        }
      }
      expect(listed.size).toBeGreaterThan(2);

      // "Crash" right after a checkpoint whose chains list parts written ahead; resume at each parallelism.
      const chosen = withAhead[Math.floor(withAhead.length / 2)]!;
      for (const parallelism of [1, 2, 3]) {
        const copy = mkdtempSync(path.join(tmpdir(), `keyflow-ahead-p${parallelism}-`));
        cpSync(dir, copy, { recursive: true });
        for (const n of folders) if (n > chosen) rmSync(path.join(copy, "checkpoints", n), { recursive: true, force: true });
        const resumed = await run(copy, pipeline(parallelism));
        expect(resumed.status).toBe("finished");
        expect(resumed.restoredFrom).toBe(Number(chosen.slice(4)));
        expect(sortedAlerts(copy), `resumed at parallelism ${parallelism}`).toEqual(expected);
      }
    },
  );

  it.each([
    [1, /the job's changes taken ahead of the barrier after checkpoint \d+ could not be written: ENOSPC: no space left on device \(test\)/],
    [2, /keyed subtask [01]'s changes taken ahead of the barrier after checkpoint \d+ could not be written: ENOSPC: no space left on device \(test\)/],
  ])("a part that cannot be written fails the checkpoint that would list it, naming whose it is, and the job with it (parallelism %i)", { timeout: 120_000 }, async (parallelism, message) => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ahead-fail-"));
    writeFileSync(path.join(dir, "payments.jsonl"), payments(16_000, 5000));
    class FullDisk extends DirectoryCheckpointStore {
      override writeSharedState(state: SnapshotPieces, tag: string, id: () => number, kind?: "full" | "delta"): Promise<string> {
        if (kind === "delta") return Promise.reject(new Error("ENOSPC: no space left on device (test)"));
        return super.writeSharedState(state, tag, id, kind);
      }
    }
    const failed: string[] = [];
    const checkpoints = new FullDisk(path.join(dir, "checkpoints"), 100_000);
    await expect(run(dir, pipeline(parallelism), { pauseMs: 150, checkpoints, failed })).rejects.toThrow(message);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(message);
    // Every checkpoint that completed lists no part: none was ever written.
    for (const n of readdirSync(path.join(dir, "checkpoints")).filter((f) => f.startsWith("chk-"))) {
      for (const { chain } of chainsOf(path.join(dir, "checkpoints", n))) expect(chain.filter((f) => f.endsWith(".delta"))).toEqual([]);
    }
  });
});
