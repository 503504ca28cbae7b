// Kafka clients for one job: one kafkajs client (and one admin) per broker list, created on first
// use and closed with the job. kafkajs' own logs go through the runner's logger.
import { Kafka, logLevel, type Admin, type LogEntry, type logCreator } from "kafkajs";
import type { Logger } from "../../log";

export class KafkaClients {
  private readonly clients = new Map<string, { kafka: Kafka; admin?: Admin; adminReady?: Promise<Admin> }>();

  constructor(
    private readonly log: Logger,
    private readonly clientId = "keyflow-runner",
  ) {}

  kafka(brokers: readonly string[]): Kafka {
    return this.entry(brokers).kafka;
  }

  /** A connected admin client for these brokers (shared within the job). */
  admin(brokers: readonly string[]): Promise<Admin> {
    const e = this.entry(brokers);
    e.adminReady ??= (async () => {
      const admin = e.kafka.admin();
      await admin.connect();
      e.admin = admin;
      return admin;
    })();
    return e.adminReady;
  }

  private entry(brokers: readonly string[]) {
    const k = brokers.join(",");
    let e = this.clients.get(k);
    if (!e) {
      const log = this.log.child("kafka");
      e = {
        kafka: new Kafka({
          clientId: this.clientId,
          brokers: [...brokers],
          connectionTimeout: 5_000,
          requestTimeout: 30_000,
          retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 10_000 },
          logLevel: logLevel.WARN,
          logCreator: kafkaLogCreator(log),
        }),
      };
      this.clients.set(k, e);
    }
    return e;
  }

  async close(): Promise<void> {
    for (const e of this.clients.values()) {
      if (e.admin) await e.admin.disconnect().catch(() => {});
    }
    this.clients.clear();
  }
}

/**
 * kafkajs logs to our logger. Two kinds of lines are demoted to debug: protocol error responses that
 * kafkajs retries by itself ("Response GroupCoordinator ... not available" while a group forms; a
 * real failure still surfaces as the job's error), and the idempotent producer's warning about
 * limited retries (harmless here: a send that gives up fails the job, which restarts from its
 * checkpoint with a new producer, so no sequence is ever continued after a gap).
 */
function kafkaLogCreator(log: Logger): logCreator {
  return () =>
    ({ level, log: entry }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = entry;
      const detail = Object.keys(extra).length > 0 ? ` ${JSON.stringify(extra)}` : "";
      const line = `${message}${detail}`;
      const routine = message.startsWith("Response ") || message.startsWith("Limiting retries for the idempotent producer");
      if (level <= logLevel.WARN && !routine) log.warn(line);
      else log.debug(line);
    };
}

/** The brokers of a node: its `brokers` param, else KAFKA_BROKERS. */
export function resolveBrokers(nodeId: string, fromParams: readonly string[] | undefined, fromEnv: readonly string[] | undefined): readonly string[] {
  const brokers = fromParams && fromParams.length > 0 ? fromParams : fromEnv;
  if (!brokers || brokers.length === 0) {
    throw new Error(`node "${nodeId}": no Kafka brokers: set the node's "brokers" param or the KAFKA_BROKERS environment variable (e.g. KAFKA_BROKERS=localhost:9092)`);
  }
  return brokers;
}

/**
 * Creates the topic with the broker's defaults when it does not exist (sinks and dead letters), and
 * waits until it is served. Without kafkajs's `waitForLeaders` (on by default): its wait retries only
 * LEADER_NOT_AVAILABLE, and a broker creating several topics at once (runners started together)
 * answers UNKNOWN_TOPIC_OR_PARTITION for a new one for a while, which failed the job at its start.
 * untilServed waits through both.
 */
export async function ensureTopic(admin: Admin, topic: string): Promise<void> {
  const existing = await admin.listTopics();
  if (existing.includes(topic)) return;
  try {
    await admin.createTopics({ topics: [{ topic }], waitForLeaders: false });
  } catch (err) {
    // Another writer created it meanwhile.
    if (errorType(err) !== "TOPIC_ALREADY_EXISTS" && !(await admin.listTopics()).includes(topic)) throw err;
  }
  await untilServed(admin, topic);
}

/** The broker's error type of a kafkajs error, or of the error its retries gave up on. */
function errorType(err: unknown): string | undefined {
  const e = err as { type?: unknown; cause?: { type?: unknown } };
  const type = e.type ?? e.cause?.type;
  return typeof type === "string" ? type : undefined;
}

/** Errors of a partition whose leader is elected in the metadata but does not serve it yet. */
const NOT_SERVED_YET = new Set(["UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"]);

/**
 * Waits until every partition of a new topic answers a ListOffsets request. `waitForLeaders` only
 * waits for leaders in the metadata; the broker may still answer "This server does not host this
 * topic-partition" while it creates the partition's log (kafkajs issue #815), which failed a
 * transactional sink's first send on a loaded machine. Bounded: a topic still not served after
 * `timeoutMs` fails the job with the broker's error.
 */
export async function untilServed(admin: Admin, topic: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await admin.fetchTopicOffsets(topic);
      return;
    } catch (err) {
      // kafkajs retries these itself first, then throws its retries-exceeded error with the broker's as cause.
      const type = errorType(err);
      if (type === undefined || !NOT_SERVED_YET.has(type) || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
