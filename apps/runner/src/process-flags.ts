// Node flags the runner process starts with (`npm start`, the `keyflow` command's shebang, the runner's benches and the engine bench).
// A 32 MB semi-space: every record is a few short-lived objects (parsed value, routing, output), and
// V8's default young generation (16 MB) scavenged and promoted them often enough to cost W1 (keyBy →
// velocity) 6-10 % of its rate at parallelism 1. 64 MB gave 8-13 %, but its longer scavenges raised
// the p99 latency at 5 k/s from 54 to 65-70 ms; 32 MB kept it (52 ms). docs/BENCHMARKS.md, "W0 and W1
// beside Flink again, and a larger young generation". V8 flags are per process: keyed workers get it too.
// An old generation of at least 128 MB before V8 runs a full collection (V8 skips full GCs below an
// initial size set this way): the runner's live heap is small (~32 MB at 20 k records/s over 100 k
// cards) while Kafka's decoding and the sink's encoding promote ~20 MB/s, so V8's limit, a multiple
// of the live heap, called a main-thread mark-compact every 0.5-1 s (29 in a 25 s run, 5-25 ms each),
// and those landing inside a checkpoint's file writes made the exactly-once tail: p99 1012-1028 ms
// against 1013-1018 with it, p99.9 1033-1064 against 1025-1053, throughput and RSS unchanged
// (docs/BENCHMARKS.md, "Session 30"). The cost: up to 128 MB of garbage per isolate before it is freed.
// bin/keyflow.mjs's shebang repeats this list: a shebang cannot import it (process-flags.test.ts checks).
export const RUNNER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32", "--initial-old-space-size=128"];
