// Several exactly-once jobs started at once, each with sink and dead-letter topics of its own that do
// not exist yet, against the REAL broker (KAFKA_BROKERS). A broker creating many topics together
// answers UNKNOWN_TOPIC_OR_PARTITION for a new one for a while; kafkajs's createTopics wait
// (`waitForLeaders`) gave up on that, and two or three of six jobs failed at their start with
// "This server does not host this topic-partition" (client.ts's ensureTopic now waits it out). The
// runners log at debug level: the extra load is what made two of three runs fail before the fix, and a
// failure then prints its stack.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, expect, it } from "vitest";
import { dedupVelocityPipeline, produceTestPayments, readCommitted, requireKafkaBrokers } from "./testing";
import { startCli } from "../../../test/run-cli";

const brokers = requireKafkaBrokers();
const run = randomBytes(4).toString("hex");
const kafka = new Kafka({ clientId: `keyflow-concurrent-start-${run}`, brokers: [...brokers], logLevel: logLevel.NOTHING });
const admin = kafka.admin();
const JOBS = 6;

afterAll(async () => {
  await admin.disconnect();
});

it(`${JOBS} exactly-once jobs started at once on topics that do not exist yet all run to the end, each with the same committed alerts`, async () => {
  await admin.connect();
  const input = `concurrent-start-${run}-payments`;
  await admin.createTopics({ topics: [{ topic: input, numPartitions: 1 }], waitForLeaders: true });
  await produceTestPayments(kafka, input, 20_000, 300, 100);
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-concurrent-start-"));
  const results = await Promise.all(
    Array.from({ length: JOBS }, (_, i) => {
      const file = path.join(dir, `job-${i}.json`);
      writeFileSync(file, JSON.stringify(dedupVelocityPipeline({ name: `concurrent-start-${run}-${i}`, inputTopic: input, outputBase: `concurrent-start-${run}-${i}`, guarantee: "exactly-once", checkpointIntervalMs: 300 })));
      return startCli(["run", file, "--checkpoint-dir", path.join(dir, `checkpoints-${i}`)], { env: { KAFKA_BROKERS: brokers.join(","), KEYFLOW_LOG_LEVEL: "debug" } }).done;
    }),
  );
  for (const [i, r] of results.entries()) expect({ job: i, code: r.code, stderr: r.stderr.slice(-2_000) }).toMatchObject({ job: i, code: 0 });
  const alerts = await Promise.all(Array.from({ length: JOBS }, (_, i) => readCommitted(kafka, admin, `concurrent-start-${run}-${i}-alerts`)));
  expect(alerts[0]!.length).toBeGreaterThan(0);
  for (const a of alerts) expect([...a].sort()).toEqual([...alerts[0]!].sort());
});
