// Node flags the runner process starts with (`npm start`, the `keyflow` command's shebang, the benches).
// A 32 MB semi-space: every record is a few short-lived objects (parsed value, routing, output), and
// V8's default young generation (16 MB) scavenged and promoted them often enough to cost W1 (keyBy →
// velocity) 6-10 % of its rate at parallelism 1. 64 MB gave 8-13 %, but its longer scavenges raised
// the p99 latency at 5 k/s from 54 to 65-70 ms; 32 MB kept it (52 ms). docs/BENCHMARKS.md, "W0 and W1
// beside Flink again, and a larger young generation". V8 flags are per process: keyed workers get it too.
// bin/keyflow.mjs's shebang repeats this list: a shebang cannot import it.
export const RUNNER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32"];
