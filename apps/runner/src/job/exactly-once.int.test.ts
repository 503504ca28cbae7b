// Exactly-once across crashes, against the REAL broker (KAFKA_BROKERS): Kafka -> dedup -> keyBy ->
// velocity -> Kafka (exactly-once) over 200 k payments, as issue 4 asks. One uninterrupted
// `keyflow run` gives the reference alerts; then the same job is killed and restarted with the same
// checkpoint folder, (1) once at each phase of the two-phase commit (KEYFLOW_CRASH_AT, ./crash-hook.ts)
// and (2) with SIGKILL at 10 or more seeded random moments. Each time the alert topic read with
// read_committed must equal the reference exactly, as a multiset: nothing missing, nothing twice.
//
// Determinism of the reference: one input partition with rising event times (no record is late,
// whatever the batch boundaries; with several partitions, how their first batches interleave
// decides which records are late), and velocity in `ordered` mode releases records in event-time
// order: any run over the same input gives the same alerts.
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { dedupVelocityPipeline, produceTestPayments, readCommitted as readCommittedTopic, requireKafkaBrokers } from "../io/kafka/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startCli, type CliResult } from "../../test/run-cli";
import { checkpointFolderName, readCheckpointFolder } from "./checkpoints";
import { CRASH_PHASES } from "./crash-hook";

const brokers = requireKafkaBrokers();

const run = randomBytes(4).toString("hex");
const PAYMENTS = `eo-${run}-payments`;
const EVENTS = 200_000;
const CARDS = 3_000;
/** Seed of the kill moments; printed, and KEYFLOW_CRASH_SEED replays a run. */
const SEED = Number(process.env.KEYFLOW_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

const kafka = new Kafka({ clientId: `keyflow-eo-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
const cliEnv = { KAFKA_BROKERS: brokers.join(",") };
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-eo-"));

/** mulberry32: the kill moments from the printed seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What produceTestPayments writes: every 40th payment twice (dedup holds the copy back), every 100th followed by a malformed line. */
function expectedCounts(): { dupes: number; malformed: number } {
  let lines = 0;
  let dupes = 0;
  let malformed = 0;
  for (let i = 0; lines < EVENTS; i++) {
    lines++;
    if (i % 40 === 0 && lines < EVENTS) (lines++, dupes++);
    if (i % 100 === 99 && lines < EVENTS) (lines++, malformed++);
  }
  return { dupes, malformed };
}

function producePayments(): Promise<void> {
  // 1 % of the lines are not JSON: each must reach the dead-letter topic once, crashes or not.
  return produceTestPayments(kafka, PAYMENTS, EVENTS, CARDS, 100);
}

/** `<base>-alerts` (velocity), `<base>-dupes` (dedup's held-back copies), `<base>-late` (none expected). */
function writePipeline(name: string, base: string, dedup = true, checkpointIntervalMs = 300): string {
  const file = path.join(dir, `${name}.json`);
  const doc = dedupVelocityPipeline({ name, inputTopic: PAYMENTS, outputBase: base, guarantee: "exactly-once", checkpointIntervalMs, dedup });
  writeFileSync(file, JSON.stringify(doc, null, 2));
  return file;
}

function readCommitted(topic: string): Promise<string[]> {
  return readCommittedTopic(kafka, admin, topic);
}

function runToEnd(file: string, ckpt: string, extraEnv: Record<string, string> = {}, parallelism = 1) {
  return startCli(["run", file, "--checkpoint-dir", ckpt, "--parallelism", String(parallelism)], { env: { ...cliEnv, ...extraEnv } });
}

const newestCheckpoint = (ckpt: string) => {
  try {
    return Math.max(0, ...readdirSync(ckpt).map((n) => Number(/^chk-(\d+)$/.exec(n)?.[1] ?? 0)));
  } catch {
    return 0;
  }
};

function expectFinished(r: CliResult): void {
  expect(r.stderr, r.stderr).not.toMatch(/keyflow run:/);
  expect(r.code, r.stderr).toBe(0);
}

/** The multiset difference, for a readable failure: what is missing and what came twice. */
function difference(got: string[], want: string[]): { missing: number; extra: number; sample: string[] } {
  const count = new Map<string, number>();
  for (const w of want) count.set(w, (count.get(w) ?? 0) + 1);
  for (const g of got) count.set(g, (count.get(g) ?? 0) - 1);
  let missing = 0;
  let extra = 0;
  const sample: string[] = [];
  for (const [k, n] of count) {
    if (n > 0) missing += n;
    if (n < 0) extra -= n;
    if (n !== 0 && sample.length < 3) sample.push(`${n > 0 ? "missing" : "extra"} ${k.slice(0, 160)}`);
  }
  return { missing, extra, sample };
}

interface Outputs {
  alerts: string[];
  dupes: string[];
  /** The pipeline's `<name>.dlq`, read committed: the malformed lines' original bytes. */
  deadLetters: string[];
}
let reference: Outputs = { alerts: [], dupes: [], deadLetters: [] };

async function readOutputs(name: string, base: string, dedup = true): Promise<Outputs> {
  return { alerts: await readCommitted(`${base}-alerts`), dupes: dedup ? await readCommitted(`${base}-dupes`) : [], deadLetters: await readCommitted(`${name}.dlq`) };
}

function expectSameOutput(got: Outputs, want: Outputs = reference): void {
  for (const k of ["alerts", "dupes", "deadLetters"] as const) {
    const diff = difference(got[k], want[k]);
    expect(diff, `${k}:\n${diff.sample.join("\n")}`).toEqual({ missing: 0, extra: 0, sample: [] });
  }
}

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: PAYMENTS, numPartitions: 1 }], waitForLeaders: true });
  await producePayments();
  const base = `eo-${run}-reference`;
  const r = await runToEnd(writePipeline(`eo-ref-${run}`, base), path.join(dir, "ckpt-reference")).done;
  expectFinished(r);
  reference = await readOutputs(`eo-ref-${run}`, base);
  expect(reference.deadLetters.length).toBe(expectedCounts().malformed);
  expect(new Set(reference.deadLetters).size).toBe(reference.deadLetters.length);
  // Enough output that every crash falls among it.
  expect(reference.alerts.length).toBeGreaterThan(10_000);
  expect(reference.dupes.length).toBe(expectedCounts().dupes);
  expect((await admin.fetchTopicOffsets(`${base}-late`)).every((o) => o.high === o.low)).toBe(true);
});

afterAll(async () => {
  await admin?.disconnect();
});

describe("exactly-once Kafka output across crashes (dedup -> keyBy -> velocity, 200 k payments)", () => {
  // At parallelism 2 the keyed part runs in worker threads and the sink task commits after aligning
  // the barriers: the same two-phase commit, reached through the parallel runtime. That needs a graph
  // with one shuffle (dedup then keyBy re-keys, which runs in one thread), so it leaves dedup out and
  // is compared with an uninterrupted run of that graph.
  it.each([1, 2])("a crash at each phase of the two-phase commit, parallelism %i: the committed alerts equal the uninterrupted run's", async (parallelism) => {
    const dedup = parallelism === 1;
    let want = reference;
    if (!dedup) {
      const refBase = `eo-${run}-reference-nodedup`;
      expectFinished(await runToEnd(writePipeline(`eo-ref-nodedup-${run}`, refBase, false), path.join(dir, "ckpt-reference-nodedup")).done);
      want = await readOutputs(`eo-ref-nodedup-${run}`, refBase, false);
      expect(want.alerts.length).toBeGreaterThan(10_000);
    }
    const base = `eo-${run}-phases-p${parallelism}`;
    // Checkpoints every 500 ms: a run may write its changes ahead of a barrier after its first
    // (ChangesAheadSchedule, from 480 ms). Whether the checkpoint a crash interrupts lists such parts
    // depends on time left before the barrier: under CPU load this job's checkpoints took 400-725 ms
    // and none did, so it is logged here, not asserted; changes-ahead.test.ts pins listing and
    // restoring them down with a paced source.
    const file = writePipeline(`eo-phases-p${parallelism}-${run}`, base, dedup, 500);
    const ckpt = path.join(dir, `ckpt-phases-p${parallelism}`);
    // A run's checkpoints after its first hold only the changes (a changelog; per keyed subtask at
    // parallelism 2), with the parts written ahead of their barrier: the newest checkpoint a crash
    // leaves is the one the next run restores from.
    const chains: string[][] = [];
    for (const phase of CRASH_PHASES) {
      // The 2nd checkpoint of each run: the run's first has committed some output already.
      const r = await runToEnd(file, ckpt, { KEYFLOW_CRASH_AT: `${phase}@2`, KEYFLOW_LOG_LEVEL: "info" }, parallelism).done;
      expect(r.signal, `${phase}: ${r.stderr}`).toBe("SIGKILL");
      expect(r.stderr).toContain(`KEYFLOW_CRASH_AT=${phase}@2`);
      const meta = (await readCheckpointFolder(path.join(ckpt, checkpointFolderName(newestCheckpoint(ckpt))))).meta;
      chains.push(...[meta.changelog, ...(meta.tasks ?? []).map((t) => t.changelog)].flatMap((c) => (c ? [c.chain] : [])));
    }
    // The crashes left changelog checkpoints for the next run to restore from, whatever the load.
    expect(chains.length).toBeGreaterThan(0);
    console.log(`crash phases at parallelism ${parallelism}: ${chains.flat().filter((f) => /-ahead\d+\.delta$/.test(f)).length} part(s) written ahead listed by the checkpoints left`);
    const last = await runToEnd(file, ckpt, { KEYFLOW_LOG_LEVEL: "info" }, parallelism).done;
    expectFinished(last);
    if (parallelism > 1) expect(last.stderr).toMatch(new RegExp(`in ${parallelism} keyed subtasks`));
    // The after-commit crash left the newest checkpoint without `_committed`: this run finished it.
    expect(last.stderr).toMatch(/finished the commit of checkpoint \d+ left pending by the previous run/);
    expectSameOutput(await readOutputs(`eo-phases-p${parallelism}-${run}`, base, dedup), want);
  });

  it("SIGKILL at 10 or more seeded random moments: the committed alerts equal the uninterrupted run's", async () => {
    console.log(`exactly-once crash test: seed ${SEED} (KEYFLOW_CRASH_SEED=${SEED} replays these kill moments)`);
    const rand = random(SEED);
    const base = `eo-${run}-kills`;
    const file = writePipeline(`eo-kills-${run}`, base);
    const ckpt = path.join(dir, "ckpt-kills");
    const moments: number[] = [];
    let finished: CliResult | undefined;
    for (let attempt = 0; moments.length < 10 && attempt < 30; attempt++) {
      const before = newestCheckpoint(ckpt);
      const started = runToEnd(file, ckpt);
      let exited: CliResult | undefined;
      void started.done.then((r) => (exited = r));
      // The kill falls 0-400 ms after this run's first new checkpoint: anywhere in an epoch, including
      // in the middle of a commit. Waiting for that checkpoint keeps every run making progress.
      await eventually(() => exited !== undefined || newestCheckpoint(ckpt) > before, "a checkpoint of this run", 60_000, 20);
      const delay = Math.floor(rand() * 400);
      await new Promise((r) => setTimeout(r, delay));
      if (exited === undefined) {
        started.child.kill("SIGKILL");
        moments.push(delay);
      }
      const r = await started.done;
      if (r.signal !== "SIGKILL") {
        expectFinished(r);
        finished = r;
        break;
      }
    }
    console.log(`exactly-once crash test: ${moments.length} kills, each ${moments.join(", ")} ms after the run's first new checkpoint`);
    expect(moments.length).toBeGreaterThanOrEqual(10);
    finished ??= await runToEnd(file, ckpt).done;
    expectFinished(finished);
    expectSameOutput(await readOutputs(`eo-kills-${run}`, base));
  });
});
