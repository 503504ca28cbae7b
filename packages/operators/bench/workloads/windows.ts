// Window workloads: the issue's keyed tumbling count, Nexmark q5-style and the seeds' 1 h / 1 min
// hopping counts, and Nexmark q11-style session windows.
import { windowHoppingSpec, windowSessionSpec, windowTumblingSpec } from "../../src/operators/windows";
import type { OperatorSpec } from "../../src/core/spec";
import { keyedHostWorkload, type Workload } from "../driver";

const KEYS = 100_000;

export const windowWorkloads: Workload[] = [
  keyedHostWorkload({
    id: "tumbling-count-10k",
    title: "keyed count, tumbling 1 min, 10k keys",
    description: "10k keys (state fits in the CPU caches), 100k events/s of event time, jitter 500 ms, out-of-orderness 1 s",
    spec: windowTumblingSpec as unknown as OperatorSpec,
    params: { sizeMs: 60_000, aggregate: { op: "count" } },
    events: 10_000_000,
    keys: 10_000,
    eventsPerSecond: 100_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
  }),
  keyedHostWorkload({
    id: "tumbling-count",
    title: "keyed count, tumbling 1 min, 100k keys",
    description: "100k keys, 100k events/s of event time (1 per key per s), jitter 500 ms, out-of-orderness 1 s",
    spec: windowTumblingSpec as unknown as OperatorSpec,
    params: { sizeMs: 60_000, aggregate: { op: "count" } },
    events: 10_000_000,
    keys: KEYS,
    eventsPerSecond: 100_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
  }),
  keyedHostWorkload({
    id: "hopping-10s-2s",
    title: "hopping count 10 s / 2 s (Nexmark q5)",
    description: "100k keys, 1M events/s of event time (10 per key per s), jitter 500 ms, out-of-orderness 1 s",
    spec: windowHoppingSpec as unknown as OperatorSpec,
    params: { sizeMs: 10_000, slideMs: 2_000, aggregate: { op: "count" } },
    events: 10_000_000,
    keys: KEYS,
    eventsPerSecond: 1_000_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
  }),
  keyedHostWorkload({
    id: "hopping-1h-1m",
    title: "hopping count 1 h / 1 min (seeds)",
    description: "100k keys, 10k events/s of event time (1 per key per 10 s), 20M events = 33 min of event time, jitter 500 ms, out-of-orderness 1 s",
    spec: windowHoppingSpec as unknown as OperatorSpec,
    params: { sizeMs: 3_600_000, slideMs: 60_000, aggregate: { op: "count" } },
    events: 20_000_000,
    keys: KEYS,
    eventsPerSecond: 10_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
  }),
  keyedHostWorkload({
    id: "session-10s",
    title: "session windows, 10 s gap (Nexmark q11)",
    description: "100k keys, 20k events/s of event time (1 per key per 5 s), jitter 500 ms, out-of-orderness 1 s",
    spec: windowSessionSpec as unknown as OperatorSpec,
    params: { gapMs: 10_000, aggregate: { op: "count" } },
    events: 5_000_000,
    keys: KEYS,
    eventsPerSecond: 20_000,
    jitterMs: 500,
    maxOutOfOrdernessMs: 1_000,
  }),
];
