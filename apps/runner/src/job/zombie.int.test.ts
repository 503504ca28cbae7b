// The zombie case of issue 4, against the REAL broker (KAFKA_BROKERS): a runner of an exactly-once
// job (Kafka -> dedup -> keyBy -> velocity -> Kafka) is frozen with SIGSTOP for longer than its Kafka
// transaction timeout and its checkpoint folder's lease; a replacement started on the same folder
// takes the job over; then the frozen one is resumed with SIGCONT while the replacement still runs.
// The resumed runner must stop by itself with a "fenced" error (its producers were fenced by the
// replacement's InitProducerId, and its checkpoint folder lease by the replacement's newer one),
// without a fresh producer and without writing a checkpoint, and the output read with read_committed
// must equal an uninterrupted run's exactly. Slow by nature: the freeze lasts past the 60 s minimum
// transaction timeout plus the broker's 10 s check for expired transactions.
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
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
});

afterAll(async () => {
  await admin?.disconnect();
});

describe("a zombie runner (SIGSTOP past its transaction timeout, replaced, then SIGCONT)", () => {
  it("stops itself as fenced, writes no checkpoint, and the committed output equals an uninterrupted run's", { timeout: 600_000 }, async () => {
    const refName = `zombie-ref-${run}`;
    const refBase = `zombie-${run}-reference`;
    const ref = await startCli(["run", writePipeline(refName, refBase), "--checkpoint-dir", path.join(dir, "ckpt-reference")], { env: cliEnv }).done;
    expect(ref.code, ref.stderr.slice(-2_000)).toBe(0);
    const want = await outputs(refName, refBase);
    expect(want.alerts!.length).toBeGreaterThan(10_000);

    const name = `zombie-${run}`;
    const base = `zombie-${run}-out`;
    const file = writePipeline(name, base);
    const ckpt = path.join(dir, "ckpt");

    // The first runner: frozen mid-stream, just after its second checkpoint was committed (`_committed`
    // written), so it holds an open transaction of the next epoch. Frozen inside the commit window
    // instead (between `chk-<n>` and the commits), the broker aborts after the timeout the transactions
    // checkpoint n lists that were not committed yet, while those of other sinks may already be: the
    // replacement then refuses to start ("can no longer be committed ... that checkpoint's output is
    // lost"). A first run of this test froze there and found it; not fixed yet (each sink has its own
    // transaction, so the epoch cannot simply be replayed from checkpoint n-1).
    const first = startCli(["run", file, "--checkpoint-dir", ckpt], { env: cliEnv });
    let firstExit: CliResult | undefined;
    void first.done.then((r) => (firstExit = r));
    let firstLog = "";
    first.child.stderr?.on("data", (d: string) => (firstLog += d));
    const committed = (id: number) => existsSync(path.join(ckpt, `chk-${String(id).padStart(10, "0")}`, "_committed"));
    await eventually(() => firstExit !== undefined || (newest(ckpt) >= 2 && committed(newest(ckpt))), "a second committed checkpoint of the first runner", 120_000, 2);
    expect(firstExit, "the first runner ended before it could be frozen: raise EVENTS").toBeUndefined();
    first.child.kill("SIGSTOP");
    const frozenAt = newest(ckpt);
    await new Promise((r) => setTimeout(r, FREEZE_MS));

    // The replacement takes the folder over (the first runner's lease has not been renewed for 75 s).
    const second = startCli(["run", file, "--checkpoint-dir", ckpt], { env: cliEnv });
    let secondExit: CliResult | undefined;
    void second.done.then((r) => (secondExit = r));
    await eventually(() => secondExit !== undefined || newest(ckpt) > frozenAt + 1, "a checkpoint of the replacement", 120_000, 10);
    expect(secondExit, `the replacement ended before the first runner was resumed: raise EVENTS\n${secondExit?.stderr.slice(-2_000)}`).toBeUndefined();

    // The zombie wakes up while the replacement runs.
    const resumedAt = firstLog.length;
    first.child.kill("SIGCONT");
    const zombie = await first.done;
    const afterResume = firstLog.slice(resumedAt);
    const secondResult = await second.done;
    console.log(`zombie: ${zombie.stderr.split("\n").find((l) => l.startsWith("keyflow run:")) ?? "(no error line)"}`);

    expect(secondResult.code, secondResult.stderr.slice(-3_000)).toBe(0);
    expect(secondResult.stderr).toMatch(/taking over checkpoint folder .* from runner pid \d+ .*whose lease was last renewed/);
    expect(zombie.code, zombie.stderr.slice(-3_000)).not.toBe(0);
    expect(zombie.stderr, zombie.stderr.slice(-3_000)).toMatch(/keyflow run: .*fenced/);
    // No checkpoint completed after the resume. Had the zombie started a fresh producer, its
    // InitProducerId would have fenced the replacement, which then could not have finished (above).
    expect(afterResume).not.toMatch(/checkpoint \d+ done/);

    const got = await outputs(name, base);
    for (const k of ["alerts", "dupes", "deadLetters"]) expect({ k, ...difference(got[k]!, want[k]!) }).toEqual({ k, missing: 0, extra: 0 });
  });
});
