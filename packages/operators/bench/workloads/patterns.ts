// Pattern workloads: the issue's ordered velocity over 1 M keys (the seeds' SAMA velocity check),
// its eager form over 100 k keys (the runner benchmark's W1 rule), and dedup of unique ids under a
// TTL (the seeds' at-least-once deduplicator, whose state must stay bounded by the ids seen within
// the TTL).
import type { OperatorSpec } from "../../src/core/spec";
import { dedupSpec } from "../../src/operators/dedup/dedup";
import { velocitySpec } from "../../src/operators/velocity/velocity";
import { keyedHostWorkload, type Workload } from "../driver";

/** Ordered velocity's input: one minute of event time at 100k events/s, every record drawn (no replay). */
const VELOCITY_EVENTS = 6_000_000;

export const patternWorkloads: Workload[] = [
  keyedHostWorkload({
    id: "velocity-ordered-1m",
    title: "velocity, ordered, 5 in 1 min over 1M keys",
    description:
      "1M keys, 100k events/s of event time (1 per key per 10 s: 6M events fill one 1-min window, ~6 records per key, Poisson), jitter 500 ms, out-of-orderness 1 s; records buffered until the watermark, counted in timestamp order; with threshold 5 a record alerts when it is its key's fifth or later, 37 % of them (an alert-heavy worst case: each alert builds its evidence); every record drawn, none replayed",
    spec: velocitySpec as unknown as OperatorSpec,
    params: { threshold: 5, windowMs: 60_000, mode: "ordered" },
    events: VELOCITY_EVENTS,
    keys: 1_000_000,
    eventsPerSecond: 100_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
    // No replay: a 2M pool played three times drew 865k of the keys and gave each key three copies
    // of its count, so 47 % of the records alerted instead of the 37 % independent draws give.
    pool: VELOCITY_EVENTS,
  }),
  keyedHostWorkload({
    id: "velocity-eager-100k",
    title: "velocity, eager, 5 in 1 min over 100k keys",
    description:
      "the runner benchmark's W1 rule: 100k cards, 10k events/s of event time (~6 records per card per window), jitter 500 ms, out-of-orderness 10 s, records with ids (evidence cites them); decided on arrival, about a third of the records alert",
    spec: velocitySpec as unknown as OperatorSpec,
    params: { threshold: 5, windowMs: 60_000, mode: "eager" },
    events: 2_000_000,
    keys: 100_000,
    eventsPerSecond: 10_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 10_000,
    value: (i) => ({ id: `tx-${i}` }),
  }),
  keyedHostWorkload({
    id: "dedup-unique-ttl",
    title: "dedup of unique ids, TTL 10 s",
    description:
      "every id unique within the TTL (keyed by the id itself), 100k events/s of event time, so ~1M live ids; jitter 500 ms, out-of-orderness 1 s; the 2M-record pool spans 20 s, longer than the TTL",
    spec: dedupSpec as unknown as OperatorSpec,
    params: { field: "eventId", ttlMs: 10_000 },
    events: 6_000_000,
    keys: 1,
    eventsPerSecond: 100_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
    value: (i) => ({ eventId: `evt-${i}` }),
    pool: 2_000_000,
  }),
];
