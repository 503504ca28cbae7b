// Node flags the runner process starts with (`npm start`, the `keyflow` command's shebang, the benches).
// A 64 MB semi-space: every record is a few short-lived objects (parsed value, routing, output), and
// V8's default young generation promoted and scavenged them often enough to cost W1 (keyBy → velocity)
// 8-13 % of its rate at parallelism 1 (docs/BENCHMARKS.md, "A larger young generation"). V8 flags are
// per process, so keyed worker threads get it too (more memory per worker at parallelism 2).
// bin/keyflow.mjs's shebang repeats this list: a shebang cannot import it.
export const RUNNER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];
