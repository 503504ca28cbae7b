// Parallel jobs end to end, in-process through the JobDriver with real worker threads and files:
// parallelism 2 writes what parallelism 1 writes; a checkpoint taken at parallelism 2 restores at 1
// and at 3 to the output of an uninterrupted run (key groups redistributed); a slow sink
// backpressures the source task while the records queued between tasks stay within the credits.
// Order across subtasks is unspecified, so outputs are compared as sorted lines. No timed
// assertions: conditions are polled with generous deadlines.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineDocument } from "@keyflow/operators";
import { eventually, runCli, startCli } from "../../test/run-cli";
import { readEnv } from "../env";
import { createConnectors } from "../io/connectors";
import type { DeadLetterSink, RecordSink, RecordSource } from "../io/types";
import { DirectoryCheckpointStore, readCheckpointFolder, TransientCheckpointStore, type CheckpointStore } from "../job/checkpoints";
import { systemClock } from "../job/clock";
import { JobDriver, type Connectors } from "../job/driver";
import { createLogger } from "../log";
import { benchPipeline, benchRecords } from "./bench";
import type { ExchangeOptions } from "./parallel";
import { registerSubtaskMetrics } from "./prometheus";
import { Registry } from "prom-client";

const OUTPUTS = ["out/alerts.jsonl", "out/sums.jsonl", "out/bench.dlq.jsonl"];

function dataDir(records: number, cards = 500): string {
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-par-"));
  writeFileSync(path.join(dir, "payments.jsonl"), benchRecords(records, cards));
  return dir;
}

const sortedLines = (dir: string, file: string): string[] =>
  readFileSync(path.join(dir, file), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .sort();

function outputs(dir: string): Record<string, string[]> {
  return Object.fromEntries(OUTPUTS.map((f) => [f, sortedLines(dir, f)]));
}

interface Wrap {
  source?: (s: RecordSource) => RecordSource;
  sink?: (s: RecordSink) => RecordSink;
  deadLetters?: (d: DeadLetterSink) => DeadLetterSink;
}

function driverFor(dir: string, doc: PipelineDocument, o: { checkpointDir?: string; checkpoints?: CheckpointStore; checkpointIntervalMs?: number; exchange?: ExchangeOptions; wrap?: Wrap } = {}): JobDriver {
  const log = createLogger("warn");
  const inner = createConnectors({ doc, jobId: doc.name, baseDir: dir, env: readEnv(), clock: systemClock, log });
  const connectors: Connectors = {
    source: (n) => (o.wrap?.source ? o.wrap.source(inner.source(n)) : inner.source(n)),
    sink: (n) => (o.wrap?.sink ? o.wrap.sink(inner.sink(n)) : inner.sink(n)),
    deadLetters: () => (o.wrap?.deadLetters ? o.wrap.deadLetters(inner.deadLetters()) : inner.deadLetters()),
    close: () => inner.close(),
  };
  return new JobDriver({
    jobId: doc.name,
    doc,
    connectors,
    checkpoints: o.checkpoints ?? (o.checkpointDir ? new DirectoryCheckpointStore(o.checkpointDir, 3) : new TransientCheckpointStore()),
    clock: systemClock,
    log,
    ...(o.checkpointIntervalMs !== undefined ? { checkpointIntervalMs: o.checkpointIntervalMs } : {}),
    ...(o.exchange ? { exchange: o.exchange } : {}),
  });
}

/** A source that hands over `batches` batches, then holds its next one until the job stops. */
function holdAfter(batches: number, held: { count: number }) {
  return (s: RecordSource): RecordSource =>
    Object.assign(Object.create(s) as RecordSource, {
      run: (emit: Parameters<RecordSource["run"]>[0], signal: AbortSignal) =>
        s.run(async (batch) => {
          if (held.count++ >= batches) {
            await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
            return;
          }
          await emit(batch);
        }, signal),
    });
}

/**
 * Outputs whose phase 2 is a no-op, as at-least-once Kafka's (writesBeforeCommit): what the file
 * sinks and dead letters of benchPipeline write is counted instead, per output.
 */
function atLeastOnceOutputs(counts: Map<string, number>): Wrap {
  const writer = <T>(name: string) => ({
    target: `memory:${name}`,
    writesBeforeCommit: true,
    open: async () => {},
    write: async (records: readonly T[]) => void counts.set(name, (counts.get(name) ?? 0) + records.length),
    prepareCommit: async () => null,
    commit: async () => {},
    close: async () => {},
  });
  return {
    sink: (s) => ({ ...writer(s.nodeId), nodeId: s.nodeId }),
    deadLetters: () => writer("dead letters"),
  };
}

/** A checkpoint folder whose write of checkpoint `holdAt` waits for release(), and whose write of `failAt` fails. */
class HeldCheckpoints extends DirectoryCheckpointStore {
  holding: (() => void) | undefined;
  held = false;
  /** Called as the hold begins. */
  onHold: () => void = () => {};
  constructor(
    dir: string,
    private readonly holdAt: number,
    private readonly failAt?: number,
  ) {
    super(dir, 100);
  }
  override async write(...args: Parameters<DirectoryCheckpointStore["write"]>): Promise<void> {
    const id = args[0].id;
    if (id === this.holdAt) {
      await new Promise<void>((resolve) => {
        this.holding = resolve;
        this.held = true;
        this.onHold();
      });
    }
    if (id === this.failAt) throw new Error(`no space left on device (test), checkpoint ${id}`);
    return super.write(...args);
  }
}

describe("parallel jobs (settings.parallelism > 1)", () => {
  it("at least once: the sink task takes the next records while a checkpoint's folder is written, one checkpoint at a time", async () => {
    const dir = dataDir(100_000);
    const doc = benchPipeline(2);
    const reference = new Map<string, number>();
    expect((await driverFor(dir, doc, { wrap: atLeastOnceOutputs(reference) }).run()).status).toBe("finished");

    const counts = new Map<string, number>();
    const total = () => [...counts.values()].reduce((a, b) => a + b, 0);
    const ckpt = mkdtempSync(path.join(tmpdir(), "keyflow-par-ckpt-"));
    const store = new HeldCheckpoints(ckpt, 2);
    // Counted as the hold begins (the test's polling could see it only after the records between
    // barriers 2 and 3 were written, and barrier 3 waits for checkpoint 2).
    let atHold = 0;
    store.onHold = () => (atHold = total());
    const run = driverFor(dir, doc, { checkpoints: store, checkpointIntervalMs: 50, wrap: atLeastOnceOutputs(counts) }).run();
    try {
      await eventually(() => store.held, "checkpoint 2's write to start", 20_000);
      // Before, the sink task waited for the folder: not one record more until it was written.
      await eventually(() => total() > atHold, "records written while checkpoint 2's folder waits", 20_000);
      // No checkpoint folder after the held one is written before it (one at a time).
      expect(readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n))).toEqual(["chk-0000000001"]);
    } finally {
      store.holding?.(); // a failure above must not leave the job waiting for ever
    }
    expect((await run).status).toBe("finished");
    expect(counts).toEqual(reference);
    const kept = readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n));
    expect(kept.length).toBeGreaterThan(2);
    for (const c of kept) expect(readdirSync(path.join(ckpt, c)), c).toContain("_committed");
  });

  it.each([
    ["at least once: a checkpoint folder that fails to be written beside the next records", true],
    ["file sinks: a checkpoint folder that fails to be written while the sink task waits", false],
  ])("%s fails the job, naming the cause, and the job ends", async (_, atLeastOnce) => {
    // The second case hung before: the failed job closed its queue, and the source task's loop then
    // spun on resolved promises, so the job's closing never got its I/O callbacks.
    const dir = dataDir(60_000);
    const ckpt = mkdtempSync(path.join(tmpdir(), "keyflow-par-ckpt-"));
    const store = new HeldCheckpoints(ckpt, 2, 2);
    const driver = driverFor(dir, benchPipeline(2), { checkpoints: store, checkpointIntervalMs: 50, ...(atLeastOnce ? { wrap: atLeastOnceOutputs(new Map()) } : {}) });
    const run = driver.run();
    run.catch(() => {}); // awaited below, after the hold
    try {
      await eventually(() => store.held, "checkpoint 2's write to start", 20_000);
    } finally {
      store.holding?.();
    }
    await expect(run).rejects.toThrow(/no space left on device \(test\), checkpoint 2/);
    expect(driver.status).toBe("failed");
    expect(readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n))).toEqual(["chk-0000000001"]);
  });

  it("changelog checkpoints: no checkpoint starts between a background whole state's naming and its chain taking it", async () => {
    // Its name is the id of the next checkpoint, which retention keeps it for: a checkpoint that
    // started meanwhile (here: while the rename is held) would not list it, and its commit would
    // prune the file that the next checkpoint then lists.
    const dir = dataDir(300_000);
    const ckpt = mkdtempSync(path.join(tmpdir(), "keyflow-par-ckpt-"));
    const folders = () => readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n));
    const store = new (class extends DirectoryCheckpointStore {
      letGo: (() => void) | undefined;
      override async writeSharedState(...args: Parameters<DirectoryCheckpointStore["writeSharedState"]>): Promise<string> {
        const file = await super.writeSharedState(...args);
        if (this.letGo === undefined) await new Promise<void>((resolve) => (this.letGo = resolve));
        return file;
      }
    })(ckpt, 1000);
    const run = driverFor(dir, benchPipeline(2), { checkpoints: store, checkpointIntervalMs: 1 }).run();
    try {
      await eventually(() => store.letGo !== undefined, "a whole state written in the background", 30_000);
      const before = folders();
      // Checkpoints are due every millisecond: before the fix, several completed during this wait
      // (5 in one run). Now none starts; one already in flight when the file was named may still
      // complete (its chain takes the file once written: see ChangelogChains.startAt).
      await new Promise((resolve) => setTimeout(resolve, 500));
      const during = folders().filter((n) => !before.includes(n));
      expect(during.length, `checkpoints completed while the whole state was being published: ${during.join(", ")}`).toBeLessThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(folders().filter((n) => !before.includes(n))).toEqual(during);
    } finally {
      store.letGo?.();
    }
    expect((await run).status).toBe("finished");
    // Every checkpoint restores (none lists a file retention deleted), and chains do start at whole states in shared/.
    for (const n of folders()) await expect(readCheckpointFolder(path.join(ckpt, n)), n).resolves.toBeDefined();
    const overShared = folders().filter((n) => (JSON.parse(readFileSync(path.join(ckpt, n, "_metadata.json"), "utf8")) as { tasks: Array<{ changelog?: { chain: string[] } }> }).tasks.some((t) => t.changelog?.chain[0]?.startsWith("../shared/")));
    expect(overShared.length).toBeGreaterThan(0);
  });

  it("parallelism 2 writes the output of parallelism 1: keyBy -> velocity and tumbling window, dead letters", async () => {
    const dir1 = dataDir(30_000);
    const dir2 = mkdtempSync(path.join(tmpdir(), "keyflow-par-"));
    cpSync(path.join(dir1, "payments.jsonl"), path.join(dir2, "payments.jsonl"));

    const one = await driverFor(dir1, benchPipeline(1)).run();
    const d2 = driverFor(dir2, benchPipeline(2));
    const two = await d2.run();
    expect(two.status).toBe("finished");
    const expected = outputs(dir1);
    expect(expected["out/sums.jsonl"]!.length).toBeGreaterThan(1000);
    expect(expected["out/alerts.jsonl"]!.length).toBeGreaterThan(0);
    expect(expected["out/bench.dlq.jsonl"]!.filter((l) => l.includes("late record")).length).toBeGreaterThan(20);
    expect(outputs(dir2)).toEqual(expected);

    // Per-node totals match; the keyed nodes' records split over the two subtasks' key groups.
    for (const id of ["payments", "valid", "byCard", "vel", "win", "alerts", "sums"]) {
      expect({ id, in: two.nodes[id]?.recordsIn, out: two.nodes[id]?.recordsOut }).toEqual({ id, in: one.nodes[id]?.recordsIn, out: one.nodes[id]?.recordsOut });
    }
    const tasks = d2.subtaskMetrics();
    expect(tasks.map((t) => `${t.task}[${t.subtask}]`)).toEqual(["source[0]", "keyed[0]", "keyed[1]", "sink[0]"]);
    const keyed = tasks.filter((t) => t.task === "keyed");
    expect(keyed.map((t) => t.keyGroupRange)).toEqual([
      { start: 0, end: 63 },
      { start: 64, end: 127 },
    ]);
    for (const t of keyed) expect(t.metrics.byCard?.recordsIn).toBeGreaterThan(0);
    expect(keyed.reduce((n, t) => n + (t.metrics.byCard?.recordsIn ?? 0), 0)).toBe(one.nodes.byCard?.recordsIn);

    // The same figures in Prometheus text, per task and subtask.
    const registry = new Registry();
    registerSubtaskMetrics(registry, () => [{ deploymentId: "j", subtaskMetrics: () => d2.subtaskMetrics() }]);
    const text = await registry.metrics();
    for (const [task, subtask] of [["source", 0], ["keyed", 0], ["keyed", 1], ["sink", 0]]) {
      for (const m of ["busy", "backpressured", "idle"]) expect(text).toContain(`keyflow_task_${m}_time_ms_per_second{job="j",task="${task}",subtask="${subtask}"}`);
    }
    expect(text).toContain(`keyflow_subtask_records_in_total{job="j",node="byCard",subtask="1"} ${keyed[1]!.metrics.byCard!.recordsIn}`);
  });

  it("a checkpoint taken at parallelism 2 restores at 1 and at 3 to the output of an uninterrupted run", async () => {
    const reference = dataDir(40_000);
    await driverFor(reference, benchPipeline(1)).run();
    const expected = outputs(reference);

    // Parallelism 2: 15 batches of 1000 records, checkpoints every 20 ms, then stop (final checkpoint).
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-par-"));
    cpSync(path.join(reference, "payments.jsonl"), path.join(dir, "payments.jsonl"));
    const ckpt = path.join(dir, "ckpt");
    const held = { count: 0 };
    const d2 = driverFor(dir, benchPipeline(2), { checkpointDir: ckpt, checkpointIntervalMs: 20, wrap: { source: holdAfter(15, held) } });
    const running = d2.run();
    await eventually(() => held.count > 15 && d2.checkpointsCompleted >= 2, "two checkpoints with the source held");
    d2.stop("test");
    const stopped = await running;
    expect(stopped.status).toBe("stopped");
    const meta = JSON.parse(readFileSync(path.join(stopped.lastCheckpoint!.path!, "_metadata.json"), "utf8")) as {
      parallelism: number;
      tasks: Array<{ task: string; subtask: number; file?: string; keyGroups?: [number, number]; alignmentMs: number }>;
    };
    expect(meta.parallelism).toBe(2);
    expect(meta.tasks.map((t) => [t.task, t.subtask, t.file, t.keyGroups])).toEqual([
      ["source", 0, "task-source-0.bin", undefined],
      ["keyed", 0, "task-keyed-0.bin", [0, 63]],
      ["keyed", 1, "task-keyed-1.bin", [64, 127]],
      ["sink", 0, undefined, undefined],
    ]);
    // Part of the input was processed: the restores below have state to redistribute.
    expect(sortedLines(dir, "out/sums.jsonl").length).toBeGreaterThan(0);
    expect(sortedLines(dir, "out/sums.jsonl").length).toBeLessThan(expected["out/sums.jsonl"]!.length);

    for (const p of [1, 3]) {
      const copy = mkdtempSync(path.join(tmpdir(), `keyflow-par-p${p}-`));
      cpSync(dir, copy, { recursive: true });
      const d = driverFor(copy, benchPipeline(p), { checkpointDir: path.join(copy, "ckpt") });
      const s = await d.run();
      expect(s.status).toBe("finished");
      expect(s.restoredFrom).toBe(stopped.lastCheckpoint!.id);
      expect({ p, out: outputs(copy) }).toEqual({ p, out: expected });
    }
  });

  it("keyflow run --parallelism 2, killed with SIGKILL after a checkpoint and restarted, writes the uninterrupted output", async () => {
    const dir = dataDir(150_000);
    const pipeline = path.join(dir, "pipeline.json");
    writeFileSync(pipeline, JSON.stringify(benchPipeline(1), null, 2));
    const reference = await runCli(["run", pipeline]);
    expect(reference.code).toBe(0);
    const expected = outputs(dir);

    const ckpt = path.join(dir, "ckpt");
    const run = startCli(["run", pipeline, "--parallelism", "2", "--checkpoint-dir", ckpt, "--checkpoint-interval", "5"]);
    await eventually(() => existsSync(ckpt) && readdirSync(ckpt).some((n) => n.startsWith("chk-") && existsSync(path.join(ckpt, n, "_committed"))), "a first checkpoint");
    run.child.kill("SIGKILL");
    const killed = await run.done;
    const resumed = await runCli(["run", pipeline, "--parallelism", "2", "--checkpoint-dir", ckpt]);
    expect(resumed.stderr).toMatch(/^(.*warning.*\n)*$/); // only the validator's warnings
    expect(resumed.code).toBe(0);
    if (killed.signal === "SIGKILL") expect(resumed.stdout).toMatch(/resumed from checkpoint \d+/);
    expect(outputs(dir)).toEqual(expected);
  });

  it("a slow sink backpressures the source task; queued records stay within the credits", async () => {
    const dir = dataDir(60_000);
    const exchange = { bufferRecords: 32, buffersPerChannel: 2 };
    const slow = (s: RecordSink): RecordSink =>
      Object.assign(Object.create(s) as RecordSink, {
        write: async (records: Parameters<RecordSink["write"]>[0]) => {
          await new Promise((r) => setTimeout(r, 20));
          await s.write(records);
        },
      });
    const d = driverFor(dir, benchPipeline(2), { exchange, wrap: { sink: slow } });
    const running = d.run();
    const seen = { sourceBackpressured: 0, keyedBackpressured: 0, maxQueued: 0 };
    await eventually(() => {
      for (const t of d.subtaskMetrics()) {
        if (t.task === "source") seen.sourceBackpressured = Math.max(seen.sourceBackpressured, t.backPressuredTimeMsPerSecond);
        if (t.task === "keyed") seen.keyedBackpressured = Math.max(seen.keyedBackpressured, t.backPressuredTimeMsPerSecond);
        seen.maxQueued = Math.max(seen.maxQueued, t.maxQueuedRecords);
        expect(t.maxQueuedRecords).toBeLessThanOrEqual(t.queueBoundRecords);
        expect(t.busyTimeMsPerSecond + t.backPressuredTimeMsPerSecond + t.idleTimeMsPerSecond).toBeLessThanOrEqual(1001);
      }
      return seen.sourceBackpressured > 0 && seen.keyedBackpressured > 0;
    }, "the source and keyed tasks to report backpressured time");
    d.stop("test");
    await running;
    const tasks = d.subtaskMetrics();
    expect(seen.maxQueued).toBeGreaterThan(0);
    for (const t of tasks) expect({ task: t.task, max: t.maxQueuedRecords <= 32 * 2 }).toEqual({ task: t.task, max: true });
  });
});
