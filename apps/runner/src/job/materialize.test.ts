// The driver packs changed heap state while it waits for input (LocalJob.materialize), so that a
// checkpoint's synchronous part, which exactly-once commits wait for, packs less. It must happen when
// the job is idle, and change no output and no checkpoint: the unit tests verify every heap snapshot's
// kept columns against columns built afresh (verify-kept-columns.setup.ts), so a stale column fails here.
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalJob, type PipelineDocument } from "@keyflow/operators";
import { readEnv } from "../env";
import { createConnectors } from "../io/connectors";
import { longPayments, paced, pacedVelocityPipeline } from "../../test/paced-velocity";
import { createLogger } from "../log";
import { DirectoryCheckpointStore } from "./checkpoints";
import { systemClock } from "./clock";
import { JobDriver } from "./driver";
import { ChangesAheadSchedule, MaterializePacer } from "./materialize";

const OUTPUTS = ["out/alerts.jsonl", "out/materialize.dlq.jsonl"];

const pipeline = (parallelism = 1) => pacedVelocityPipeline("materialize", { parallelism });

async function run(dir: string, doc: PipelineDocument, pauseMs: number | undefined): Promise<{ status: string; checkpoints: number; failed: string[] }> {
  const failed: string[] = [];
  const log = createLogger("warn");
  const inner = createConnectors({ doc, jobId: doc.name, baseDir: dir, env: readEnv(), clock: systemClock, log });
  const driver = new JobDriver({
    jobId: doc.name,
    doc,
    connectors: {
      source: (n) => (pauseMs === undefined ? inner.source(n) : paced(pauseMs)(inner.source(n))),
      sink: (n) => inner.sink(n),
      deadLetters: () => inner.deadLetters(),
      close: () => inner.close(),
    },
    checkpoints: new DirectoryCheckpointStore(path.join(dir, "checkpoints"), 3),
    clock: systemClock,
    log,
    checkpointIntervalMs: 400,
    onCheckpointFailed: (f) => failed.push(f.reason),
  });
  const summary = await driver.run();
  return { status: summary.status, checkpoints: readdirSync(path.join(dir, "checkpoints")).filter((f) => f.startsWith("chk-")).length, failed };
}

/**
 * Long lines: with more changed keys than the table holds between two packings, its kept columns
 * go stale and are rebuilt whole, and materialization would not be exercised.
 */
const payments = (n: number, cards: number) => longPayments(n, cards, 1999);

const read = (dir: string) => Object.fromEntries(OUTPUTS.map((f) => [f, readFileSync(path.join(dir, f), "utf8")]));
/** Order across subtasks is unspecified: outputs as sorted lines. */
const sorted = (dir: string) => Object.fromEntries(OUTPUTS.map((f) => [f, readFileSync(path.join(dir, f), "utf8").split("\n").sort()]));

describe("materializing heap state while the job waits for input", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("happens between paced batches; the output is that of a job that never does it, and every checkpoint passes the kept-columns check", async () => {
    const records = payments(12_000, 5000);
    const dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), "keyflow-materialize-")));
    for (const d of dirs) writeFileSync(path.join(d, "payments.jsonl"), records);
    const doc = pipeline();
    const materialize = vi.spyOn(LocalJob.prototype, "materialize");
    const paced = await run(dirs[0]!, doc, 80);
    expect(paced.status).toBe("finished");
    expect(paced.checkpoints).toBeGreaterThan(0);
    expect(paced.failed).toEqual([]);
    expect(materialize.mock.calls.length).toBeGreaterThan(0);
    materialize.mockImplementation(() => true);
    const plain = await run(dirs[1]!, doc, 80);
    expect(plain.status).toBe("finished");
    expect(read(dirs[0]!)).toEqual(read(dirs[1]!));
    expect(read(dirs[0]!)["out/alerts.jsonl"]!.split("\n").length).toBeGreaterThan(1000);
  }, 120_000);

  it("in keyed subtasks too (parallelism 2, worker threads checking their snapshots): the output is that of parallelism 1", async () => {
    const records = payments(12_000, 5000);
    const dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), "keyflow-materialize-")));
    for (const d of dirs) writeFileSync(path.join(d, "payments.jsonl"), records);
    const two = await run(dirs[0]!, pipeline(2), 150);
    expect(two.status).toBe("finished");
    expect(two.checkpoints).toBeGreaterThan(0);
    expect(two.failed).toEqual([]);
    expect((await run(dirs[1]!, pipeline(1), undefined)).status).toBe("finished");
    expect(sorted(dirs[0]!)).toEqual(sorted(dirs[1]!));
  }, 120_000);
});

describe("MaterializePacer: a window before each expected barrier", () => {
  /** A job whose state takes `slices` slices to pack after any input. */
  const job = (slices: number) => {
    let left = 0;
    return { fill: () => (left = slices), materialize: () => --left <= 0 };
  };

  it("packs nothing until `lead` before the barrier is due, then at most every 50 ms", () => {
    let t = 0;
    const pacer = new MaterializePacer(60_000, () => t);
    expect(pacer.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    pacer.inputProcessed();
    expect(pacer.leadMs).toBe(2000);
    expect(pacer.dueInMs()).toBe(58_000);
    t = 57_999;
    expect(pacer.dueInMs()).toBe(1);
    t = 58_000;
    expect(pacer.dueInMs()).toBe(0);
    expect(pacer.materializeSlice(job(1))).toBe(true);
    expect(pacer.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    pacer.inputProcessed();
    expect(pacer.dueInMs()).toBe(50);
    // A barrier: the next window opens an interval later.
    t = 60_000;
    pacer.packed();
    pacer.inputProcessed();
    expect(pacer.dueInMs()).toBeGreaterThan(50_000);
  });

  it("doubles the lead after a barrier that came before a pass ended, shrinks it by a quarter after one that left it idle, within [500 ms, interval]", () => {
    let t = 0;
    const pacer = new MaterializePacer(10_000, () => t);
    const j = job(1000);
    const cycle = (passEndsAfterMs: number | undefined) => {
      const start = t;
      const opens = start + 10_000 - pacer.leadMs;
      t = opens;
      pacer.inputProcessed();
      j.fill();
      if (passEndsAfterMs !== undefined) {
        pacer.materializeSlice(j);
        t = opens + passEndsAfterMs;
        while (!pacer.materializeSlice(j));
      } else pacer.materializeSlice(j);
      t = start + 10_000;
      pacer.packed();
    };
    cycle(undefined);
    expect(pacer.leadMs).toBe(4000);
    cycle(undefined);
    expect(pacer.leadMs).toBe(8000);
    cycle(undefined);
    expect(pacer.leadMs).toBe(10_000);
    cycle(9000); // Ended 1 s before the barrier: not idle for half the window.
    expect(pacer.leadMs).toBe(10_000);
    cycle(0);
    expect(pacer.leadMs).toBe(7500);
    for (let i = 0; i < 20; i++) cycle(0);
    expect(pacer.leadMs).toBe(500);
    // Nothing packed ahead (no input): the lead stays.
    t += 10_000;
    pacer.packed();
    expect(pacer.leadMs).toBe(500);
  });

  it("with an interval shorter than the first lead, packs whenever the job waits, as before windows", () => {
    let t = 0;
    const pacer = new MaterializePacer(400, () => t);
    pacer.inputProcessed();
    expect(pacer.dueInMs()).toBe(50);
    t = 50;
    expect(pacer.dueInMs()).toBe(0);
  });
});

describe("MaterializePacer: spacing after a long pass", () => {
  it("waits four times as long as the last pass took (at most a fifth of the time), and 50 ms after short ones", () => {
    let t = 0;
    const pacer = new MaterializePacer(400, () => t);
    pacer.inputProcessed();
    t = 50;
    // A pass of three slices, 30 ms each.
    let slices = 0;
    const slow = {
      materialize: () => {
        t += 30;
        return ++slices === 3;
      },
    };
    while (!pacer.materializeSlice(slow));
    expect(t).toBe(140);
    pacer.inputProcessed();
    expect(pacer.dueInMs()).toBe(360);
    t = 500;
    pacer.materializeSlice({ materialize: () => ((t += 1), true) });
    pacer.inputProcessed();
    expect(pacer.dueInMs()).toBe(50);
  });
});

describe("ChangesAheadSchedule: a keyed subtask's changes taken once per interval, just before the barrier", () => {
  it("is due 120 ms before the next barrier is expected, once, after a changelog barrier and input since", () => {
    let t = 0;
    const s = new ChangesAheadSchedule(1000, () => t);
    s.inputProcessed();
    // No barrier yet: no chain to join.
    expect(s.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    t = 10;
    s.barrier(true);
    // Nothing changed since the barrier.
    expect(s.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    s.inputProcessed();
    expect(s.dueInMs()).toBe(880);
    t = 889;
    expect(s.dueInMs()).toBe(1);
    t = 890;
    expect(s.dueInMs()).toBe(0);
    s.taken();
    s.inputProcessed();
    expect(s.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    // A barrier late by 200 ms: the next ones are expected an interval after it.
    t = 1210;
    s.barrier(true);
    s.inputProcessed();
    expect(s.dueInMs()).toBe(880);
    // An interval after the snapshot started, not after the commit the caller waited for.
    t = 2500;
    s.barrier(true, 2210);
    s.inputProcessed();
    expect(s.dueInMs()).toBe(590);
  });

  it("is never due after a barrier without a changelog snapshot, or under intervals shorter than 480 ms", () => {
    let t = 0;
    const plain = new ChangesAheadSchedule(60_000, () => t);
    plain.barrier(false);
    plain.inputProcessed();
    t = 120_000;
    expect(plain.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    const short = new ChangesAheadSchedule(479, () => t);
    short.barrier(true);
    short.inputProcessed();
    t += 10_000;
    expect(short.dueInMs()).toBe(Number.POSITIVE_INFINITY);
    const enough = new ChangesAheadSchedule(480, () => t);
    enough.barrier(true);
    enough.inputProcessed();
    expect(enough.dueInMs()).toBe(360);
  });
});
