// Node flags the runner process starts with (`npm start`, the `keyflow` command's shebang, the runner's benches and the engine bench).
// A 32 MB semi-space: every record is a few short-lived objects (parsed value, routing, output), and
// V8's default young generation scavenged and promoted them often enough to cost W1 a measurable part
// of its rate, while a larger one lengthened scavenges and the latency tail. V8 flags are per process:
// keyed workers get it too. An old generation of at least 128 MB before V8 runs a full collection: the
// runner's live heap is small while Kafka's decoding and the sink's encoding promote steadily, so V8's
// limit, a multiple of the live heap, called main-thread mark-compacts every second or so, and those
// inside a checkpoint's writes made the exactly-once tail. The cost: up to 128 MB of garbage per isolate
// before it is freed. (The measurements are in the commits that set these flags.)
// bin/keyflow.mjs's shebang repeats this list: a shebang cannot import it (process-flags.test.ts checks).
export const RUNNER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=32", "--initial-old-space-size=128"];
