// The zombie case of issue 4, against the REAL broker (KAFKA_BROKERS): a runner of an exactly-once
// job (Kafka -> dedup -> keyBy -> velocity -> Kafka) is frozen with SIGSTOP for longer than its Kafka
// transaction timeout and its checkpoint folder's lease; a replacement started on the same folder
// takes the job over; then the frozen one is resumed with SIGCONT while the replacement still runs.
// The resumed runner must stop by itself with a "fenced" error (its producers were fenced by the
// replacement's InitProducerId, and its checkpoint folder lease by the replacement's newer one),
// without a fresh producer and without writing a checkpoint, and the output read with read_committed
// must equal an uninterrupted run's exactly. Slow by nature: the freeze lasts past the 60 s minimum
// transaction timeout plus the broker's 10 s check for expired transactions. The three scenarios
// run concurrently (each on its own job, topics and checkpoint folder): most of their time is the
// freeze, and one after another they took five minutes of CI.
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel, type Admin } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dedupVelocityPipeline, produceTestPayments, readCommitted, requireKafkaBrokers } from "../io/kafka/testing";
import { eventually, startCli, type CliResult } from "../../test/run-cli";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const PAYMENTS = `zombie-${run}-payments`;
const EVENTS = 300_000;
const CARDS = 3_000;
/** Past the runner's minimum transaction timeout (60 s), the broker's expiry check (10 s) and the 30 s lease. */
const FREEZE_MS = 75_000;

const kafka = new Kafka({ clientId: `keyflow-zombie-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
let admin: Admin;
const cliEnv = { KAFKA_BROKERS: brokers.join(","), KEYFLOW_LOG_LEVEL: "debug" };
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-zombie-"));
/** The uninterrupted run's committed output. */
let want: Record<string, string[]> = {};

function writePipeline(name: string, base: string): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(dedupVelocityPipeline({ name, inputTopic: PAYMENTS, outputBase: base, guarantee: "exactly-once", checkpointIntervalMs: 300 }), null, 2));
  return file;
}

const checkpointIds = (ckpt: string): number[] => {
  try {
    return readdirSync(ckpt)
      .map((n) => Number(/^chk-(\d+)$/.exec(n)?.[1] ?? 0))
      .filter((n) => n > 0)
      .sort((a, b) => a - b);
  } catch {
    return [];
  }
};
const newest = (ckpt: string) => Math.max(0, ...checkpointIds(ckpt));

async function outputs(name: string, base: string): Promise<Record<string, string[]>> {
  return { alerts: await readCommitted(kafka, admin, `${base}-alerts`), dupes: await readCommitted(kafka, admin, `${base}-dupes`), deadLetters: await readCommitted(kafka, admin, `${name}.dlq`) };
}

/** Missing and extra messages of `got` against `want`, as multisets. */
function difference(got: string[], want: string[]): { missing: number; extra: number } {
  const count = new Map<string, number>();
  for (const w of want) count.set(w, (count.get(w) ?? 0) + 1);
  for (const g of got) count.set(g, (count.get(g) ?? 0) - 1);
  let missing = 0;
  let extra = 0;
  for (const n of count.values()) {
    if (n > 0) missing += n;
    if (n < 0) extra -= n;
  }
  return { missing, extra };
}

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: PAYMENTS, numPartitions: 1 }], waitForLeaders: true });
  await produceTestPayments(kafka, PAYMENTS, EVENTS, CARDS, 100);
  const refName = `zombie-ref-${run}`;
  const refBase = `zombie-${run}-reference`;
  const ref = await startCli(["run", writePipeline(refName, refBase), "--checkpoint-dir", path.join(dir, "ckpt-reference")], { env: cliEnv }).done;
  expect(ref.code, ref.stderr.slice(-2_000)).toBe(0);
  want = await outputs(refName, refBase);
  expect(want.alerts!.length).toBeGreaterThan(10_000);
});

afterAll(async () => {
  await admin?.disconnect();
});

/** Whether process `pid` is stopped (state T in /proc/<pid>/stat). */
function isStopped(pid: number | undefined): boolean {
  try {
    return pid !== undefined && /^\d+ \(.*\) T /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * The first runner is frozen (`freeze` says where), the replacement takes the folder over after
 * FREEZE_MS, the first is resumed with SIGCONT while the replacement runs; both exits and the output.
 */
async function zombieScenario(tag: string, freeze: { env: Record<string, string> } | { when: (ckpt: string) => boolean }) {
  const name = `zombie-${tag}-${run}`;
  const base = `zombie-${run}-${tag}`;
  const file = writePipeline(name, base);
  const ckpt = path.join(dir, `ckpt-${tag}`);
  const first = startCli(["run", file, "--checkpoint-dir", ckpt], { env: { ...cliEnv, ...("env" in freeze ? freeze.env : {}) } });
  let firstExit: CliResult | undefined;
  void first.done.then((r) => (firstExit = r));
  let firstLog = "";
  first.child.stderr?.on("data", (d: string) => (firstLog += d));
  let second: ReturnType<typeof startCli> | undefined;
  let secondExit: CliResult | undefined;
  try {
  if ("when" in freeze) {
    await eventually(() => firstExit !== undefined || freeze.when(ckpt), "the first runner's freezing point", 120_000, 2);
    expect(firstExit, "the first runner ended before it could be frozen: raise EVENTS").toBeUndefined();
    first.child.kill("SIGSTOP");
  } else {
    await eventually(() => firstExit !== undefined || isStopped(first.child.pid), "the first runner to stop itself (KEYFLOW_STOP_AT)", 120_000, 10);
    expect(firstExit, firstExit?.stderr.slice(-2_000)).toBeUndefined();
  }
  const frozenAt = newest(ckpt);
  await new Promise((r) => setTimeout(r, FREEZE_MS));

  // The replacement takes the folder over (the first runner's lease has not been renewed for 75 s).
  second = startCli(["run", file, "--checkpoint-dir", ckpt], { env: cliEnv });
  void second.done.then((r) => (secondExit = r));
  await eventually(() => secondExit !== undefined || newest(ckpt) > frozenAt + 1, "a checkpoint of the replacement", 120_000, 10);
  expect(secondExit?.code ?? "running", `the replacement ended before the first runner was resumed (raise EVENTS if it finished)\n${secondExit?.stderr.slice(-2_000)}`).toBe("running");

  // The zombie wakes up while the replacement runs.
  const resumedAt = firstLog.length;
  first.child.kill("SIGCONT");
  const zombie = await first.done;
  const afterResume = firstLog.slice(resumedAt);
  const replacement = await second.done;
  console.log(`zombie (${tag}): ${zombie.stderr.split("\n").find((l) => l.startsWith("keyflow run:")) ?? "(no error line)"}`);
  return { zombie, afterResume, replacement, frozenAt, got: await outputs(name, base) };
  } finally {
    // A failed expectation must not leave a frozen or running runner behind.
    if (firstExit === undefined) (first.child.kill("SIGCONT"), first.child.kill("SIGKILL"));
    if (second && secondExit === undefined) second.child.kill("SIGKILL");
  }
}

function expectZombieFencedAndOutputExact(r: Awaited<ReturnType<typeof zombieScenario>>): void {
  expect(r.replacement.code, r.replacement.stderr.slice(-3_000)).toBe(0);
  expect(r.replacement.stderr).toMatch(/taking over checkpoint folder .* from runner pid \d+ .*whose lease was last renewed/);
  expect(r.zombie.code, r.zombie.stderr.slice(-3_000)).not.toBe(0);
  expect(r.zombie.stderr, r.zombie.stderr.slice(-3_000)).toMatch(/keyflow run: .*fenced/);
  // No checkpoint newer than the one it was frozen at completed after the resume (one whose marker
  // was written before the freeze may still log its end). Had the zombie started a fresh producer, its
  // InitProducerId would have fenced the replacement, which then could not have finished (above).
  const doneAfter = [...r.afterResume.matchAll(/checkpoint (\d+) done/g)].map((m) => Number(m[1]));
  expect(doneAfter.filter((id) => id > r.frozenAt)).toEqual([]);
  for (const k of ["alerts", "dupes", "deadLetters"]) expect({ k, ...difference(r.got[k]!, want[k]!) }).toEqual({ k, missing: 0, extra: 0 });
}

// One concurrent suite around both, so that the suites run side by side too, not only their tests.
describe.concurrent("zombies", () => {
  describe("a zombie runner (SIGSTOP past its transaction timeout, replaced, then SIGCONT)", () => {
    // Frozen mid-stream, just after its second checkpoint was committed (`_committed` written), so it
    // holds an open transaction of the next epoch.
    it.concurrent("frozen between checkpoints: it stops itself as fenced, writes no checkpoint, and the committed output equals an uninterrupted run's", { timeout: 600_000 }, async () => {
      const committed = (ckpt: string, id: number) => existsSync(path.join(ckpt, `chk-${String(id).padStart(10, "0")}`, "_committed"));
      expectZombieFencedAndOutputExact(await zombieScenario("between", { when: (ckpt) => newest(ckpt) >= 2 && committed(ckpt, newest(ckpt)) }));
    });

    // Frozen inside the commit window (`chk-3` durable, no sink committed yet) past the transaction
    // timeout: the broker aborts every transaction checkpoint 3 lists, so none of its epoch's output is
    // visible. The replacement finds them all lost, restores checkpoint 2 instead and replays the epoch
    // (./recover-epoch.ts); the resumed zombie's commit of checkpoint 3 is then refused as fenced.
    it.concurrent("frozen inside the commit window past the transaction timeout: the replacement replays the lost epoch from the checkpoint before it", { timeout: 600_000 }, async () => {
      const r = await zombieScenario("commit-window", { env: { KEYFLOW_STOP_AT: "after-checkpoint-write@3" } });
      expect(r.replacement.stderr).toMatch(/checkpoint 3 was written but never committed, and the broker aborted every transaction it lists .* replayed from checkpoint 2/);
      expectZombieFencedAndOutputExact(r);
    });
  });

  describe("a runner frozen between its sinks' commits and its dead letters' past the transaction timeout", () => {
    // KEYFLOW_STOP_AT=after-sinks-commit@3: checkpoint 3's sink transactions are committed (visible),
    // its dead letters' transaction stays open until the broker aborts it. Replaying the epoch would
    // write the committed alerts twice and going on would lose the dead letters: the replacement must
    // refuse to start, naming the checkpoint and each transaction, on every attempt, and have written
    // nothing twice.
    it.concurrent("the replacement refuses the partly lost checkpoint with a clear error, and again on the next start", { timeout: 600_000 }, async () => {
      const tag = "mixed";
      const name = `zombie-${tag}-${run}`;
      const base = `zombie-${run}-${tag}`;
      const file = writePipeline(name, base);
      const ckpt = path.join(dir, `ckpt-${tag}`);
      const first = startCli(["run", file, "--checkpoint-dir", ckpt], { env: { ...cliEnv, KEYFLOW_STOP_AT: "after-sinks-commit@3" } });
      let firstExit: CliResult | undefined;
      void first.done.then((r) => (firstExit = r));
      try {
        await eventually(() => firstExit !== undefined || isStopped(first.child.pid), "the first runner to stop itself (KEYFLOW_STOP_AT)", 120_000, 10);
        expect(firstExit, firstExit?.stderr.slice(-2_000)).toBeUndefined();
        await new Promise((r) => setTimeout(r, FREEZE_MS));
      } finally {
        if (firstExit === undefined) first.child.kill("SIGKILL");
      }
      await first.done;
      const refusal = new RegExp(
        `keyflow run: .*checkpoint 3 cannot be recovered exactly: its epoch's output is partly lost\\. ` +
          `lost \\(aborted by the broker, never visible\\): the dead-letter output \\(transactional id "keyflow\\.${name}\\.dead-letters\\.0\\.[01]"\\): [A-Z_]+; ` +
          `committed \\(visible to read_committed consumers\\): node "(alerts|dupes)"`,
      );
      for (const attempt of [1, 2]) {
        const r = await startCli(["run", file, "--checkpoint-dir", ckpt], { env: cliEnv }).done;
        expect(r.code, `attempt ${attempt}: ${r.stderr.slice(-3_000)}`).not.toBe(0);
        expect(r.stderr, `attempt ${attempt}`).toMatch(refusal);
      }
      // Nothing of the uninterrupted run's output is there twice, and nothing that run did not write.
      const got = await outputs(name, base);
      for (const k of ["alerts", "dupes", "deadLetters"]) expect({ k, extra: difference(got[k]!, want[k]!).extra }).toEqual({ k, extra: 0 });
      expect(got.alerts!.length).toBeGreaterThan(0);
    });
  });
});
