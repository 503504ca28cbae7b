// The validator's file and output rules (issue 35 points 2 and 5): a file param is a relative path
// inside the data folder, and two sinks (or a sink and the dead letters) never write one output.
import { describe, expect, it } from "vitest";
import { deadLetterOutput, relativePathInFolder } from "./outputs";
import { validatePipeline } from "./validate";

const fileSource = (p: string) => ({ id: "payments", type: "source.file", params: { path: p, timestampField: "ts" } });
const fileSink = (id: string, p: string) => ({ id, type: "sink.file", params: { path: p } });
const kafkaSink = (id: string, topic: string) => ({ id, type: "sink.kafka", params: { topic } });

function pipeline(nodes: object[], name = "paths") {
  const sinks = nodes.slice(1).map((n) => (n as { id: string }).id);
  return { format: "keyflow.pipeline/v1", name, nodes, edges: sinks.map((to) => ({ from: "payments", to })) };
}

const errors = (doc: unknown, opts?: Parameters<typeof validatePipeline>[1]) =>
  validatePipeline(doc, opts)
    .issues.filter((i) => i.severity === "error")
    .map((i) => i.message);

describe("file params stay inside the data folder", () => {
  it("refuses a source reading /etc/passwd, naming the node and the param", () => {
    expect(errors(pipeline([fileSource("/etc/passwd"), fileSink("sink", "out/alerts.jsonl")]))).toEqual([
      'node "payments": param "path" must be a path inside the data folder, not an absolute path',
    ]);
  });

  it("refuses a sink path that leaves the folder, and absolute paths in other spellings", () => {
    expect(errors(pipeline([fileSource("in.jsonl"), fileSink("sink", "out/../../victim.txt")]))).toEqual([
      'node "sink": param "path" must be a path inside the data folder, not one that leaves it ("out/../../victim.txt")',
    ]);
    for (const p of ["/proc/self/environ", "\\\\server\\share\\x", "C:\\Windows\\x", "c:x"]) {
      expect(errors(pipeline([fileSource(p), fileSink("sink", "o.jsonl")]))).toEqual([`node "payments": param "path" must be a path inside the data folder, not an absolute path`]);
    }
    expect(errors(pipeline([fileSource("data/.."), fileSink("sink", "o.jsonl")]))).toEqual(['node "payments": param "path" must name a file inside the data folder, not the folder itself']);
  });

  it("accepts relative paths that stay inside, `..` included", () => {
    expect(errors(pipeline([fileSource("uploads/x.jsonl"), fileSink("sink", "out/sub/../alerts.jsonl")]))).toEqual([]);
    expect(relativePathInFolder("./a//b/../c.jsonl")).toEqual({ ok: true, normalized: "a/c.jsonl" });
  });

  it("leaves paths to the runner when asked (keyflow run --allow-paths)", () => {
    expect(errors(pipeline([fileSource("/tmp/in.jsonl"), fileSink("sink", "/tmp/out.jsonl")]), { anyFilePaths: true })).toEqual([]);
  });
});

describe("one writer per output", () => {
  it("refuses two file sinks writing one file, naming both nodes", () => {
    expect(errors(pipeline([fileSource("in.jsonl"), fileSink("alerts", "out/alerts.jsonl"), fileSink("copy", "out/./alerts.jsonl")]))).toEqual([
      'node "copy": param "path" writes file "out/./alerts.jsonl", which node "alerts" writes too — one writer per output: give each sink its own file',
    ]);
  });

  it("refuses two Kafka sinks writing one topic, naming both nodes", () => {
    expect(errors(pipeline([fileSource("in.jsonl"), kafkaSink("a", "alerts"), kafkaSink("b", "alerts")]))).toEqual([
      'node "b": param "topic" writes topic "alerts", which node "a" writes too — one writer per output: give each sink its own topic',
    ]);
  });

  it("refuses a sink writing the dead-letter output (topic or file)", () => {
    expect(errors(pipeline([fileSource("in.jsonl"), kafkaSink("a", "card.dlq")], "card"))).toEqual([
      'node "a": param "topic" writes topic "card.dlq", the pipeline\'s dead-letter output — one writer per output: give the sink another topic (or set settings.deadLetterTopic)',
    ]);
    expect(errors(pipeline([fileSource("in.jsonl"), fileSink("a", "out/x.jsonl"), fileSink("b", "out/card.dlq.jsonl")], "card"))).toEqual([
      'node "b": param "path" writes file "out/card.dlq.jsonl", the pipeline\'s dead-letter output — one writer per output: give the sink another file',
    ]);
    expect(deadLetterOutput({ name: "card", settings: {} as never, nodes: [fileSink("a", "out/x.jsonl")] as never })).toEqual({ kind: "file", path: "out/card.dlq.jsonl" });
  });

  it("accepts different outputs, and shared ones where the caller routes them (a rule job)", () => {
    expect(errors(pipeline([fileSource("in.jsonl"), kafkaSink("a", "alerts"), kafkaSink("b", "alerts.big"), fileSink("c", "alerts")]))).toEqual([]);
    expect(errors(pipeline([fileSource("in.jsonl"), kafkaSink("a", "alerts"), kafkaSink("b", "alerts")]), { sharedOutputs: true })).toEqual([]);
  });
});
