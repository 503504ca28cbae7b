// End-to-end benchmark through the real broker: W0 (source.kafka → sink.kafka) and W1 (source.kafka →
// keyBy → velocity → sink.kafka), Keyflow's `keyflow run` beside Apache Flink's MiniCluster on the same
// topic, the same records and the same cores. Results go to docs/BENCHMARKS.md by hand, with the command.
//   npm run bench:e2e -w apps/runner -- [--events 500000] [--runs 3] [--engines keyflow,flink]
//     [--workloads w0,w1] [--parallelism 1,2] [--guarantees at-least-once,exactly-once]
//   npm run bench:e2e -w apps/runner -- --mode latency --rate 30000 [--seconds 30] [--runs 3] [--keys 10000]
//     [--guarantees at-least-once,exactly-once] [--parallelism 1] [--checkpoint-interval 1000]
//   Latency mode: W1 (`eager` velocity) on an unbounded topic fed by a paced producer at --rate events/s;
//   each payment carries its produce time (`sentAt`), each alert echoes its payment (`event`), and a
//   read_committed consumer of the alert topic measures receive time − sentAt (p50/p99/max).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Kafka, logLevel, Partitioners } from "kafkajs";
import { RUNNER_NODE_FLAGS } from "../src/process-flags";

/** The runner's node flags, and any in KEYFLOW_BENCH_RUNNER_NODE_FLAGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to see where its time goes). */
const runnerNodeFlags = [...RUNNER_NODE_FLAGS, ...(process.env.KEYFLOW_BENCH_RUNNER_NODE_FLAGS?.split(" ").filter((f) => f !== "") ?? [])];

const root = path.resolve(import.meta.dirname, "../../..");
const flinkDir = path.join(import.meta.dirname, "flink");

const { values: opts } = parseArgs({
  options: {
    events: { type: "string", default: "500000" },
    runs: { type: "string", default: "3" },
    engines: { type: "string", default: "keyflow,flink" },
    workloads: { type: "string", default: "w0,w1" },
    parallelism: { type: "string", default: "1,2" },
    guarantees: { type: "string", default: "at-least-once" },
    keys: { type: "string", default: "100000" },
    mode: { type: "string", default: "throughput" },
    rate: { type: "string", default: "30000" },
    seconds: { type: "string", default: "30" },
    "checkpoint-interval": { type: "string" },
  },
});
const events = Number(opts.events);
const runs = Number(opts.runs);
const keys = Number(opts.keys);
const list = (s: string) => s.split(",").map((x) => x.trim()).filter(Boolean);
const engines = list(opts.engines);
const workloads = list(opts.workloads) as Array<"w0" | "w1">;
const parallelisms = list(opts.parallelism).map(Number);
const guarantees = list(opts.guarantees) as Array<"at-least-once" | "exactly-once">;
const checkpointIntervalMs = Number(opts["checkpoint-interval"] ?? 10_000);
const velocity = { threshold: 5, windowMs: 60_000 };

function brokers(): string {
  if (process.env.KAFKA_BROKERS) return process.env.KAFKA_BROKERS;
  const envFile = path.join(root, ".keyflow/services/env");
  if (!existsSync(envFile)) execFileSync("bash", [path.join(root, "scripts/services/start.sh")], { stdio: "inherit" });
  const line = readFileSync(envFile, "utf8").split("\n").find((l) => l.startsWith("KAFKA_BROKERS="));
  if (!line) throw new Error(`${envFile} names no KAFKA_BROKERS`);
  return line.slice("KAFKA_BROKERS=".length).trim();
}

const broker = brokers();
process.env.KAFKA_BROKERS = broker; // the runner reads it for source.kafka and sink.kafka
const kafka = new Kafka({ clientId: "keyflow-bench", brokers: [broker], logLevel: logLevel.NOTHING });

async function topicSize(admin: ReturnType<Kafka["admin"]>, topic: string): Promise<number | undefined> {
  const existing = await admin.listTopics();
  if (!existing.includes(topic)) return undefined;
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
}

/** A payment of about 200 bytes; cards uniform over `keys`, event time 10k events/s with 0–500 ms jitter. */
function payment(i: number, seed: { next(): number }) {
  const card = `card-${Math.floor(seed.next() * keys)}`;
  return {
    key: card,
    value: JSON.stringify({
      id: `tx-${String(i).padStart(9, "0")}`,
      card,
      merchant: `m-${Math.floor(seed.next() * 5000)}`,
      amount: Math.round(seed.next() * 100_000) / 100,
      currency: "EUR",
      country: "NL",
      channel: seed.next() < 0.5 ? "ecom" : "pos",
      device: `dev-${Math.floor(seed.next() * 1e6).toString(16)}`,
      ip: `10.${Math.floor(seed.next() * 256)}.${Math.floor(seed.next() * 256)}.${Math.floor(seed.next() * 256)}`,
      mcc: "5411",
      ts: 1_780_000_000_000 + Math.floor(i / 10) + Math.floor(seed.next() * 500),
    }),
  };
}

function mulberry32(a: number) {
  return {
    next() {
      a |= 0;
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

async function ensureInput(): Promise<string> {
  const topic = `bench.payments.v2.${events}.${keys}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const size = await topicSize(admin, topic);
    if (size === events) return topic;
    if (size !== undefined) await admin.deleteTopics({ topics: [topic] });
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const seed = mulberry32(42);
  const started = Date.now();
  for (let i = 0; i < events; ) {
    const batch = [];
    for (let j = 0; j < 5000 && i < events; j++, i++) batch.push(payment(i, seed));
    await producer.send({ topic, messages: batch });
  }
  await producer.disconnect();
  const sample = payment(0, mulberry32(1)).value;
  console.error(`produced ${events} records (about ${sample.length} bytes each) to ${topic} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return topic;
}

interface Measurement {
  engine: string;
  workload: string;
  parallelism: number;
  guarantee: string;
  /** Seconds the job ran (engine start-up excluded where the engine reports it). */
  jobSeconds: number;
  wallSeconds: number;
  cpuSeconds: number;
  maxRssMb: number;
  outputs: number;
}

/** Runs a command under /usr/bin/time; resolves stdout and the wall/user/sys/RSS line. */
function timed(cmd: string, args: string[], cwd: string): Promise<{ stdout: string; wall: number; cpu: number; rssMb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/time", ["-f", "TIME %e %U %S %M", cmd, ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const m = /TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(stderr);
      if (code !== 0 || !m) return reject(new Error(`${cmd} ${args.join(" ")} exited ${code}\n${stdout.slice(-2000)}\n${stderr.slice(-4000)}`));
      resolve({ stdout, wall: Number(m[1]), cpu: Number(m[2]) + Number(m[3]), rssMb: Number(m[4]) / 1024 });
    });
  });
}

/**
 * The records in a run's output topic, which is then deleted: every run writes a topic of its own,
 * and kept (retention is by size per partition, never by time: see scripts/services/start.sh) they
 * filled the machine's disk, 72 GB over a few hundred runs, until the broker died mid-bench.
 */
async function countAndDropOutput(topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const n = (await topicSize(admin, topic)) ?? 0;
    await admin.deleteTopics({ topics: [topic] });
    return n;
  } finally {
    await admin.disconnect();
  }
}

/** Deletes a latency run's own topics (see countAndDropOutput). */
async function dropTopics(topics: string[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

async function runKeyflow(input: string, workload: "w0" | "w1", parallelism: number, guarantee: string, run: number): Promise<Measurement> {
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-bench-"));
  const out = `bench.out.keyflow.${workload}.p${parallelism}.${guarantee}.${Date.now()}.${run}`;
  const source = { id: "payments", type: "source.kafka", params: { topic: input, bounded: true, timestampField: "ts", maxOutOfOrdernessMs: 10_000 } };
  const sink = { id: "out", type: "sink.kafka", params: { topic: out, deliveryGuarantee: guarantee } };
  const nodes =
    workload === "w0"
      ? [source, sink]
      : [source, { id: "byCard", type: "keyBy", params: { field: "card" } }, { id: "vel", type: "velocity", params: { ...velocity, mode: "eager" } }, sink];
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i]?.id ?? "", to: n.id }));
  const pipeline = { format: "keyflow.pipeline/v1", name: `bench-${workload}`, settings: { checkpointIntervalMs, parallelism }, nodes, edges };
  const file = path.join(dir, "pipeline.json");
  writeFileSync(file, JSON.stringify(pipeline));
  try {
    const r = await timed("node", [...runnerNodeFlags, path.join(root, "apps/runner/bin/keyflow.mjs"), "run", file, "--checkpoint-dir", path.join(dir, "checkpoints")], root);
    const m = / in ([\d.]+) s/.exec(r.stdout);
    if (!m) throw new Error(`keyflow run printed no duration:\n${r.stdout}`);
    return { engine: "keyflow", workload, parallelism, guarantee, jobSeconds: Number(m[1]), wallSeconds: r.wall, cpuSeconds: r.cpu, maxRssMb: r.rssMb, outputs: await countAndDropOutput(out) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function buildFlink(): string {
  const jar = path.join(flinkDir, "target/flink-bench-0.jar");
  if (!existsSync(jar)) {
    console.error("building the Flink job (mvn package dependency:copy-dependencies)…");
    execFileSync("mvn", ["-B", "-q", "--no-transfer-progress", "-f", path.join(flinkDir, "pom.xml"), "package", "dependency:copy-dependencies"], { stdio: "inherit" });
  }
  return `${jar}:${path.join(flinkDir, "target/lib")}/*`;
}

// Flink 2.x on Java 17 needs its usual module openings (flink-conf's env.java.opts.all default).
const javaOpens = ["java.base/java.util", "java.base/java.lang", "java.base/java.lang.reflect", "java.base/java.io", "java.base/java.nio", "java.base/sun.nio.ch", "java.base/java.net", "java.base/java.text", "java.base/java.time", "java.base/java.util.concurrent", "java.base/java.util.concurrent.atomic", "java.base/java.util.concurrent.locks", "java.base/java.lang.invoke", "java.base/java.math", "java.base/java.security"].flatMap((m) => ["--add-opens", `${m}=ALL-UNNAMED`]);

async function runFlink(classpath: string, input: string, workload: "w0" | "w1", parallelism: number, guarantee: string, run: number): Promise<Measurement> {
  const out = `bench.out.flink.${workload}.p${parallelism}.${guarantee}.${Date.now()}.${run}`;
  const checkpointDir = mkdtempSync(path.join(tmpdir(), "keyflow-bench-flink-"));
  const args = [...javaOpens, "-Xmx2g", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath, "dev.keyflow.bench.FlinkBench", "--workload", workload, "--brokers", broker, "--in", input, "--out", out, "--parallelism", String(parallelism), "--guarantee", guarantee, "--checkpointMs", String(checkpointIntervalMs), "--threshold", String(velocity.threshold), "--windowMs", String(velocity.windowMs), "--checkpointDir", checkpointDir];
  const r = await timed("java", args, flinkDir).finally(() => rmSync(checkpointDir, { recursive: true, force: true }));
  const m = /FLINK_BENCH_RESULT (\{.*\})/.exec(r.stdout);
  if (!m?.[1]) throw new Error(`the Flink job printed no result:\n${r.stdout.slice(-2000)}`);
  const result = JSON.parse(m[1]) as { netRuntimeMs: number; wallMs: number };
  return { engine: "flink", workload, parallelism, guarantee, jobSeconds: result.netRuntimeMs / 1000, wallSeconds: r.wall, cpuSeconds: r.cpu, maxRssMb: r.rssMb, outputs: await countAndDropOutput(out) };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
const rate = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M/s` : `${(n / 1e3).toFixed(1)} k/s`);

/** Latency at a steady rate: see the header. Warm-up (5 s) alerts are left out of the figures. */
async function runLatency(guarantee: string, parallelism: number, run: number): Promise<{ p50: number; p99: number; p999: number; max: number; alerts: number; produced: number; rate: number }> {
  const targetRate = Number(opts.rate);
  const seconds = Number(opts.seconds);
  const warmupMs = 5_000;
  const stamp = `${Date.now()}.${run}`;
  const input = `bench.latency.in.${stamp}`;
  const out = `bench.latency.out.${guarantee}.p${parallelism}.${stamp}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: input, numPartitions: 2 }, { topic: out, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();

  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-bench-latency-"));
  const pipeline = {
    format: "keyflow.pipeline/v1",
    name: "bench-latency-w1",
    settings: { checkpointIntervalMs, parallelism },
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: input, startFrom: "earliest", timestampField: "ts", maxOutOfOrdernessMs: 1_000 } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "vel", type: "velocity", params: { ...velocity, mode: "eager" } },
      { id: "out", type: "sink.kafka", params: { topic: out, deliveryGuarantee: guarantee } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "out" },
    ],
  };
  const file = path.join(dir, "pipeline.json");
  writeFileSync(file, JSON.stringify(pipeline));
  const runner = spawn("node", [...runnerNodeFlags, path.join(root, "apps/runner/bin/keyflow.mjs"), "run", file, "--checkpoint-dir", path.join(dir, "checkpoints")], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, KEYFLOW_LOG_LEVEL: process.env.KEYFLOW_LOG_LEVEL ?? "info" } });
  let runnerLog = "";
  runner.stderr.on("data", (d: Buffer) => (runnerLog += d.toString()));
  runner.stdout.on("data", (d: Buffer) => (runnerLog += d.toString()));
  const runnerExit = new Promise<void>((resolve) => runner.on("close", () => resolve()));
  process.once("exit", () => runner.kill("SIGKILL")); // never leave a runner behind a failed bench

  // The alert reader: read_committed, from the start of the (new) topic.
  const latencies: number[] = [];
  /** Each measured alert's send and arrival times, for where the slowest ones' time went. */
  const arrivals: Array<[sentAt: number, seenAt: number]> = [];
  let measureFrom = Number.POSITIVE_INFINITY;
  let lastAlertAt = Date.now();
  // 256 KB fetches rather than kafkajs's 1 MB: a commit makes a second's alerts (megabytes) visible at
  // once, and kafkajs decodes a whole fetch response before handing over any of it, so the first
  // alerts waited ~10 ms for this reader's decoding of the rest (4 December: commit to reader 9-11 ms
  // for the slowest 1 %, 3-5 ms with 256 KB, p50 unchanged; 64 KB raised the p50 by 20 ms).
  const consumer = kafka.consumer({ groupId: `keyflow-bench-latency-${stamp}`, readUncommitted: false, maxWaitTimeInMs: 100, maxBytesPerPartition: 256 * 1024 });
  await consumer.connect();
  await consumer.subscribe({ topics: [out], fromBeginning: true });
  await consumer.run({
    // No offset commits: each one (an OffsetCommit after every batch, 7 ms on Kafka 4's group
    // coordinator) held the next fetch back and added 10-15 ms to every alert's measured latency.
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      const now = Date.now();
      lastAlertAt = now;
      for (const m of batch.messages) {
        const sentAt = m.value ? sentAtOf(m.value) : undefined;
        if (sentAt !== undefined && sentAt >= measureFrom) {
          latencies.push(now - sentAt);
          arrivals.push([sentAt, now]);
        }
      }
    },
  });

  // Wait for the runner to be reading before the clock starts.
  const readyBy = Date.now() + 60_000;
  while (!/running pipeline/.test(runnerLog)) {
    if (Date.now() > readyBy || runner.exitCode !== null) throw new Error(`the runner did not start:\n${runnerLog.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }

  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const seed = mulberry32(1000 + run);
  const started = Date.now();
  measureFrom = started + warmupMs;
  const endAt = measureFrom + seconds * 1000;
  let sent = 0;
  for (;;) {
    const now = Date.now();
    if (now >= endAt) break;
    const due = Math.floor(((now - started) / 1000) * targetRate);
    if (due > sent) {
      const batch = [];
      // At most 2 000 a request (a producer that fell behind must not exceed the broker's max request size).
      for (const last = Math.min(due, sent + 2_000); sent < last; sent++) {
        const p = payment(sent, seed);
        const value = JSON.parse(p.value) as Record<string, unknown>;
        batch.push({ key: p.key, value: JSON.stringify({ ...value, ts: now, sentAt: now }) });
      }
      await producer.send({ topic: input, messages: batch });
    } else {
      await new Promise((r) => setTimeout(r, 2));
    }
  }
  await producer.disconnect();
  const produceSeconds = (Date.now() - started) / 1000;
  // Until the alerts stop coming (an exactly-once sink shows them at the next checkpoint).
  while (Date.now() - lastAlertAt < Math.max(3_000, checkpointIntervalMs + 2_000)) await new Promise((r) => setTimeout(r, 200));
  await consumer.disconnect();
  runner.kill("SIGTERM");
  const killer = setTimeout(() => runner.kill("SIGKILL"), 30_000);
  await runnerExit;
  clearTimeout(killer);
  // KEYFLOW_BENCH_RUNNER_LOG=FILE keeps the runner's log (with KEYFLOW_LOG_LEVEL=debug, every checkpoint's phases).
  if (process.env.KEYFLOW_BENCH_RUNNER_LOG) writeFileSync(process.env.KEYFLOW_BENCH_RUNNER_LOG, runnerLog);
  // KEYFLOW_BENCH_ARRIVALS=FILE keeps each measured alert's send and arrival times (ms since the epoch, one pair a line), to set the slow ones beside the runner's log.
  if (process.env.KEYFLOW_BENCH_ARRIVALS) writeFileSync(process.env.KEYFLOW_BENCH_ARRIVALS, arrivals.map(([s, a]) => `${s} ${a}`).join("\n"));
  rmSync(dir, { recursive: true, force: true });
  await dropTopics([input, out]);
  if (latencies.length === 0) throw new Error(`no alerts measured:\n${runnerLog.slice(-3000)}`);
  // With KEYFLOW_LOG_LEVEL=debug the runner says where each checkpoint's time went: medians of its phases.
  const phases = new Map<string, number[]>();
  for (const m of runnerLog.matchAll(/checkpoint \d+ done in ([\d.]+) ms([^\n]*)/g)) {
    phases.set("total", [...(phases.get("total") ?? []), Number(m[1])]);
    for (const p of (m[2] ?? "").matchAll(/(snapshot|sinks flushed|written|committed|marked) (\d+) ms/g)) phases.set(p[1]!, [...(phases.get(p[1]!) ?? []), Number(p[2])]);
  }
  if (phases.size > 0) console.log(`  ${guarantee} p=${parallelism}: checkpoint phases (medians of ${phases.get("total")?.length ?? 0}): ${[...phases].map(([k, v]) => `${k} ${median(v)} ms`).join(", ")}`);
  // Each checkpoint's snapshot, and how long before the next barrier packing ahead starts (materialize.ts).
  const leads = [...runnerLog.matchAll(/packed ahead from (\d+) ms before/g)].map((m) => m[1]);
  if (leads.length > 0) console.log(`  ${guarantee} p=${parallelism}: snapshot ms per checkpoint ${phases.get("snapshot")?.join(", ") ?? "-"}; lead ms after each ${leads.join(", ")}`);
  if (guarantee === "exactly-once") slowestParts(runnerLog, arrivals);
  const sorted = latencies.sort((a, b) => a - b);
  const q = (f: number) => sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))] ?? Number.NaN;
  return { p50: q(0.5), p99: q(0.99), p999: q(0.999), max: sorted[sorted.length - 1] ?? Number.NaN, alerts: sorted.length, produced: sent, rate: sent / produceSeconds };
}

/** The last commit at or before `t` (commits ascending), by binary search. */
function commitBefore<C extends { commit: number }>(commits: readonly C[], t: number): C | undefined {
  let lo = 0;
  let hi = commits.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((commits[mid] as C).commit <= t) lo = mid + 1;
    else hi = mid;
  }
  return commits[lo - 1];
}

const SENT_AT = Buffer.from('"sentAt":');

/**
 * The alert's event's `sentAt`, read from the bytes: an exactly-once commit makes a second's alerts
 * (megabytes) visible at once, and parsing each whole alert in this process, beside the runner on
 * two cores, delayed the reader by tens of milliseconds, which the latency then counted.
 */
function sentAtOf(value: Buffer): number | undefined {
  const at = value.indexOf(SENT_AT);
  if (at < 0) return undefined;
  let n = 0;
  let i = at + SENT_AT.length;
  for (let c = value[i]; c !== undefined && c >= 48 && c <= 57; c = value[++i]) n = n * 10 + (c - 48);
  return i > at + SENT_AT.length ? n : undefined;
}

/**
 * Exactly-once, with KEYFLOW_LOG_LEVEL=debug: where the slowest 1 % of alerts spent their time. An
 * alert becomes visible at the commit of the checkpoint after it; from the runner's debug lines
 * (logged when a checkpoint ends, with its phases) each checkpoint's barrier (snapshot start) and
 * commit times follow. For each slow alert: the wait from its send to that barrier, the barrier to
 * the commit, and the commit to its arrival at the reader (the reader's fetch and parse).
 */
function slowestParts(runnerLog: string, arrivals: ReadonlyArray<[number, number]>): void {
  const commits: Array<{ barrier: number; commit: number }> = [];
  for (const m of runnerLog.matchAll(/^(\S+) debug .*checkpoint \d+ done in ([\d.]+) ms \(\d+ state bytes; snapshot (\d+) ms, sinks flushed (\d+) ms, written (\d+) ms, committed (\d+) ms/gm)) {
    const barrier = Date.parse(m[1]!) - Number(m[2]);
    commits.push({ barrier, commit: barrier + Number(m[3]) + Number(m[4]) + Number(m[5]) + Number(m[6]) });
  }
  if (commits.length === 0) return;
  // When each alert became visible to read_committed consumers: its checkpoint's commit (the reader's
  // own fetch and decode after that is not the runner's latency).
  const visible: number[] = [];
  for (const [sentAt, seenAt] of arrivals) {
    const c = commitBefore(commits, seenAt + 2);
    if (c !== undefined) visible.push(c.commit - sentAt);
  }
  visible.sort((a, b) => a - b);
  const vq = (f: number) => Math.round(visible[Math.min(visible.length - 1, Math.floor(f * visible.length))] ?? Number.NaN);
  console.log(`  send to commit (visible to read_committed consumers), ${visible.length} alerts: p50 ${vq(0.5)} ms, p99 ${vq(0.99)} ms, p99.9 ${vq(0.999)} ms`);
  const slow = [...arrivals].sort((a, b) => b[1] - b[0] - (a[1] - a[0])).slice(0, Math.max(1, Math.floor(arrivals.length / 100)));
  const parts = { wait: [] as number[], checkpoint: [] as number[], read: [] as number[] };
  for (const [sentAt, seenAt] of slow) {
    const c = commitBefore(commits, seenAt + 2); // log times are whole milliseconds
    if (c === undefined) continue;
    parts.wait.push(c.barrier - sentAt);
    parts.checkpoint.push(c.commit - c.barrier);
    parts.read.push(seenAt - c.commit);
  }
  console.log(`  slowest 1 % (${slow.length} alerts), medians: send to barrier ${median(parts.wait)} ms, barrier to commit ${median(parts.checkpoint)} ms, commit to reader ${median(parts.read)} ms`);
}

async function latencyMain() {
  console.log(`latency: W1 eager velocity, rate ${opts.rate}/s for ${opts.seconds} s after a 5 s warm-up, keys ${keys}, checkpoints every ${checkpointIntervalMs} ms, runs ${runs}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average before ${loadavg()[0]?.toFixed(1)}`);
  console.log("| delivery | p | checkpoint ms | rate (achieved) | p50 ms | p99 ms | p99.9 ms | max ms | alerts measured | runs (p50 / p99 ms) |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
  for (const guarantee of guarantees)
    for (const parallelism of parallelisms) {
      const ms = [];
      for (let run = 0; run < runs; run++) ms.push(await runLatency(guarantee, parallelism, run));
      console.log(
        `| ${guarantee} | ${parallelism} | ${checkpointIntervalMs} | ${rate(median(ms.map((m) => m.rate)))} | ${median(ms.map((m) => m.p50))} | ${median(ms.map((m) => m.p99))} | ${median(ms.map((m) => m.p999))} | ${median(ms.map((m) => m.max))} | ${median(ms.map((m) => m.alerts))} | ${ms.map((m) => `${m.p50} / ${m.p99}`).join(", ")} |`,
      );
    }
  console.log(`load average after ${loadavg()[0]?.toFixed(1)}`);
}

async function main() {
  const input = await ensureInput();
  const classpath = engines.includes("flink") ? buildFlink() : "";
  const rows: string[] = [];
  console.log(`events ${events}, keys ${keys}, runs ${runs}, ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, load average before ${loadavg()[0]?.toFixed(1)}`);
  console.log("| engine | workload | p | delivery | job s (median) | events/s (job) | events/s (wall) | events per CPU-second | max RSS | outputs | runs (job s) |");
  console.log("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|");
  for (const workload of workloads)
    for (const guarantee of guarantees)
      for (const parallelism of parallelisms)
        for (const engine of engines) {
          const ms: Measurement[] = [];
          for (let run = 0; run < runs; run++) {
            ms.push(engine === "flink" ? await runFlink(classpath, input, workload, parallelism, guarantee, run) : await runKeyflow(input, workload, parallelism, guarantee, run));
          }
          const job = median(ms.map((m) => m.jobSeconds));
          const wall = median(ms.map((m) => m.wallSeconds));
          const cpu = median(ms.map((m) => m.cpuSeconds));
          const row = `| ${engine} | ${workload} | ${parallelism} | ${guarantee} | ${job.toFixed(1)} | ${rate(events / job)} | ${rate(events / wall)} | ${rate(events / cpu)} | ${median(ms.map((m) => m.maxRssMb)).toFixed(0)} MB | ${median(ms.map((m) => m.outputs))} | ${ms.map((m) => m.jobSeconds.toFixed(1)).join(", ")} |`;
          rows.push(row);
          console.log(row);
        }
  console.log(`load average after ${loadavg()[0]?.toFixed(1)}`);
}

if (opts.mode === "latency") await latencyMain();
else await main();
