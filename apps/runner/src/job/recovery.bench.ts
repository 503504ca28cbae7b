// Crash-recovery figures for docs/BENCHMARKS.md, against the real broker (KAFKA_BROKERS):
//   npx tsx apps/runner/src/job/recovery.bench.ts [--events 200000] [--runs 3]
// The crash test's pipeline (Kafka -> dedup -> keyBy -> velocity -> Kafka) through `keyflow run`:
// 1. end-to-end rate of a bounded run with exactly-once and with at-least-once sinks;
// 2. checkpoint durations (the driver's debug lines) during the exactly-once run;
// 3. recovery: SIGKILL after the 3rd checkpoint, restart with the same folder, seconds from the kill
//    to the restarted run's first committed checkpoint (its output is visible to read_committed then).
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { eventually, startCli } from "../../test/run-cli";
import { dedupVelocityPipeline, produceTestPayments, requireKafkaBrokers } from "../io/kafka/testing";

const { values } = parseArgs({ options: { events: { type: "string", default: "200000" }, runs: { type: "string", default: "3" } } });
const EVENTS = Number(values.events);
const RUNS = Number(values.runs);
const brokers = requireKafkaBrokers();
const run = randomBytes(3).toString("hex");
const topic = `bench-${run}-payments`;
const dir = mkdtempSync(path.join(tmpdir(), "keyflow-runner-bench-"));
const env = { KAFKA_BROKERS: brokers.join(","), KEYFLOW_LOG_LEVEL: "debug" };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

function pipeline(name: string, guarantee: "exactly-once" | "at-least-once"): string {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(dedupVelocityPipeline({ name, inputTopic: topic, outputBase: name, guarantee, checkpointIntervalMs: 1000 })));
  return file;
}

const checkpointsIn = (ckpt: string) => (existsSync(ckpt) ? readdirSync(ckpt).filter((n) => /^chk-\d+$/.test(n)).sort() : []);
const committedAfter = (ckpt: string, after: string) => checkpointsIn(ckpt).some((n) => n > after && existsSync(path.join(ckpt, n, "_committed")));

async function main(): Promise<void> {
  const kafka = new Kafka({ clientId: `bench-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await produceTestPayments(kafka, topic, EVENTS, 3_000);
  await admin.disconnect();
  console.log(`${EVENTS} payments in ${topic}; ${RUNS} runs each`);

  for (const guarantee of ["exactly-once", "at-least-once"] as const) {
    const rates: number[] = [];
    const durations: number[] = [];
    const phases = new Map<string, number[]>();
    for (let r = 0; r < RUNS; r++) {
      const name = `bench-${run}-${guarantee}-${r}`;
      const res = await startCli(["run", pipeline(name, guarantee), "--checkpoint-dir", path.join(dir, `ckpt-${name}`)], { env }).done;
      if (res.code !== 0) throw new Error(res.stderr);
      const secs = Number(/finished in ([\d.]+) s/.exec(res.stdout)?.[1]);
      rates.push(EVENTS / secs);
      for (const m of res.stderr.matchAll(/checkpoint \d+ done in ([\d.]+) ms([^\n]*)/g)) {
        durations.push(Number(m[1]));
        for (const p of (m[2] ?? "").matchAll(/(snapshot|sinks flushed|written|committed|marked) (\d+) ms/g)) phases.set(p[1]!, [...(phases.get(p[1]!) ?? []), Number(p[2])]);
      }
    }
    console.log(`${guarantee}: median ${Math.round(median(rates))} events/s (runs ${rates.map((x) => Math.round(x)).join(", ")}); checkpoint duration median ${median(durations)} ms, max ${Math.max(...durations)} ms over ${durations.length}`);
    console.log(`  ${guarantee} checkpoint phases (medians): ${[...phases].map(([k, v]) => `${k} ${median(v)} ms`).join(", ")}`);
  }

  const recoveries: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const name = `bench-${run}-recovery-${r}`;
    const file = pipeline(name, "exactly-once");
    const ckpt = path.join(dir, `ckpt-${name}`);
    const first = startCli(["run", file, "--checkpoint-dir", ckpt], { env });
    let ended = false;
    void first.done.then(() => (ended = true));
    await eventually(() => ended || checkpointsIn(ckpt).length >= 3, "three checkpoints", 60_000, 10);
    if (ended) throw new Error(`the run ended before its 3rd checkpoint: too few events to measure a recovery (use --events 200000)`);
    const last = checkpointsIn(ckpt).at(-1) ?? "";
    const killedAt = performance.now();
    first.child.kill("SIGKILL");
    await first.done;
    const second = startCli(["run", file, "--checkpoint-dir", ckpt], { env });
    await eventually(() => committedAfter(ckpt, last), "a committed checkpoint of the restarted run", 60_000, 10);
    recoveries.push((performance.now() - killedAt) / 1000);
    second.child.kill("SIGKILL");
    await second.done;
  }
  console.log(`recovery (SIGKILL -> restarted run's first committed checkpoint): median ${median(recoveries).toFixed(2)} s (runs ${recoveries.map((x) => x.toFixed(2)).join(", ")})`);
}

await main();
