/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { catalog } from "../catalog";
import { defineOperator, type OperatorSpec } from "../core/spec";
import type { PipelineDocumentInput } from "./document";
import { durationMs } from "./durations";
import { canConnect, formatIssue, resolvePortKinds, validatePipeline, type Issue } from "./validate";

// ---- Stand-ins for the stateful operators other modules own, so these tests pin the validator's
// rules whatever the real velocity or windows look like today.

const passThrough = () => ({ processElement() {} });

const velocity = defineOperator({
  type: "velocity",
  version: 2,
  category: "pattern",
  title: "Velocity",
  summary: "count per key in a sliding window",
  docs: "test stand-in",
  params: z.strictObject({ threshold: z.number().int().positive().describe("records"), windowMs: durationMs().describe("window") }),
  inputs: [{ id: "in", label: "records", accepts: ["keyed"], required: true }],
  outputs: [
    { id: "out", label: "alerts", kind: "keyed" },
    { id: "late", label: "late", kind: "keyed", side: true },
  ],
  requiresKeyedInput: true,
  stateful: true,
  create: passThrough,
});

/** Keeps state per key with no TTL and no timers: the seeds' "unbounded GROUP BY". */
const counter = defineOperator({
  type: "test.counter",
  version: 1,
  category: "pattern",
  title: "Counter",
  summary: "running count per key",
  docs: "test stand-in",
  params: z.strictObject({}),
  inputs: [{ id: "in", label: "records", accepts: ["keyed"], required: true }],
  outputs: [{ id: "out", label: "counts", kind: "keyed" }],
  requiresKeyedInput: true,
  stateful: true,
  create: passThrough,
});

/** A window aggregate with a configurable state TTL (read through the param-name convention). */
const windowed = defineOperator({
  type: "test.windowed",
  version: 1,
  category: "pattern",
  title: "Windowed",
  summary: "aggregate with TTL",
  docs: "test stand-in",
  params: z.strictObject({ windowMs: durationMs().describe("window"), ttlMs: durationMs().describe("state TTL") }),
  inputs: [{ id: "in", label: "records", accepts: ["keyed"], required: true }],
  outputs: [{ id: "out", label: "results", kind: "keyed" }],
  requiresKeyedInput: true,
  stateful: true,
  create: passThrough,
});

/** Declares its retention through the spec hook instead of param names. */
const hooked = defineOperator({
  type: "test.hooked",
  version: 1,
  category: "pattern",
  title: "Hooked",
  summary: "declares retention",
  docs: "test stand-in",
  params: z.strictObject({ spanMs: durationMs().describe("span"), keepMs: durationMs().describe("keep") }),
  inputs: [{ id: "in", label: "records", accepts: ["keyed"], required: true }],
  outputs: [{ id: "out", label: "results", kind: "keyed" }],
  requiresKeyedInput: true,
  stateful: true,
  stateRetention: (p) => ({ ttlMs: p.keepMs, ttlParam: "keepMs", windowMs: p.spanMs }),
  create: passThrough,
});

/** An input that takes keyed streams without being a keyed operator (a join's side input, say). */
const keyedOnly = defineOperator({
  type: "test.keyedOnly",
  version: 1,
  category: "enrichment",
  title: "Keyed only",
  summary: "takes keyed streams",
  docs: "test stand-in",
  params: z.strictObject({}),
  inputs: [
    { id: "in", label: "records", accepts: ["stream", "keyed"], required: true },
    { id: "reference", label: "reference records", accepts: ["keyed"], required: true },
  ],
  outputs: [{ id: "out", label: "joined", kind: "stream" }],
  requiresKeyedInput: false,
  stateful: true,
  create: passThrough,
});

const specs: readonly OperatorSpec[] = [...catalog, velocity, counter, windowed, hooked, keyedOnly];
const validate = (doc: unknown) => validatePipeline(doc, { specs });

// ---- Document builders

type NodeIn = PipelineDocumentInput["nodes"][number];
const node = (id: string, type: string, params: Record<string, unknown> = {}): NodeIn => ({ id, type, params });
const src = (id = "src", fields?: string[]): NodeIn => node(id, "source.file", { path: "in.jsonl", timestampField: "ts", ...(fields ? { fields } : {}) });
const sink = (id = "sink"): NodeIn => node(id, "sink.file", { path: "out.jsonl" });
const edge = (from: string, to: string) => ({ from, to });

/** A pipeline of nodes connected in a chain, the usual shape of tests. */
function chain(...nodes: NodeIn[]): PipelineDocumentInput {
  return { format: "keyflow.pipeline/v1", name: "t", nodes, edges: nodes.slice(1).map((n, i) => edge((nodes[i] as NodeIn).id, n.id)) };
}

const messages = (issues: Issue[], code?: string) => issues.filter((i) => code === undefined || i.code === code).map((i) => i.message);
const errors = (doc: unknown) => validate(doc).issues.filter((i) => i.severity === "error");
const warnings = (doc: unknown) => validate(doc).issues.filter((i) => i.severity === "warning");

// ---- Tests

describe("validatePipeline: a valid pipeline", () => {
  it("is ok, returns the document with settings defaults and the parsed params", () => {
    const r = validate(chain(src(), node("f", "filter", { expression: "amount > 50000" }), node("k", "keyBy", { field: "cardId" }), node("vel", "velocity", { threshold: 5, windowMs: "10m" }), sink()));
    expect(r.issues.filter((i) => i.severity === "error")).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.document?.settings.parallelism).toBe(1);
    expect(r.params["vel"]).toEqual({ threshold: 5, windowMs: 600_000 });
    expect(r.params["src"]).toMatchObject({ maxOutOfOrdernessMs: 10_000 });
  });

  it("stays ok with warnings only", () => {
    const r = validate(chain(src(), node("k", "keyBy", { field: "cardId" }), node("vel", "velocity", { threshold: 5, windowMs: 1000 }), sink()));
    expect(r.ok).toBe(true);
    expect(r.issues.map((i) => i.code)).toEqual(["late-port-unconnected"]);
  });
});

describe("validatePipeline: document shape", () => {
  it("refuses something that is not a pipeline", () => {
    expect(messages(validate(42).issues)).toEqual(["pipeline: must be a keyflow.pipeline/v1 JSON object, got 42"]);
  });

  it("names the missing format, name and nodes", () => {
    expect(messages(validate({}).issues)).toEqual([
      'pipeline: "format" must be "keyflow.pipeline/v1" (it is missing: is this a Keyflow pipeline file?)',
      'pipeline: "name" is required',
      'pipeline: "nodes" is required',
    ]);
  });

  it("names the node and the edge of a shape error", () => {
    const r = validate({ format: "keyflow.pipeline/v1", name: "t", nodes: [{ id: "1x", type: "filter" }, { id: "ok", type: 3 }], edges: [{ from: "a" }] });
    expect(r.ok).toBe(false);
    expect(r.document).toBeUndefined();
    expect(messages(r.issues)).toEqual([
      'node "1x": "id" is invalid (a node id starts with a letter and has only letters, digits, _ and - (at most 64)), got "1x"',
      'node "ok": "type" must be text (a string), got 3',
      'edge "#1": "to" is required',
    ]);
    expect(r.issues[1]?.nodeId).toBe("ok");
  });

  it("checks settings", () => {
    const doc = { ...chain(src(), sink()), settings: { parallelism: 0 } };
    expect(messages(validate(doc).issues)).toEqual(['settings: "parallelism" must be ≥ 1, got 0']);
    const over = { ...chain(src(), sink()), settings: { parallelism: 64, maxParallelism: 32 } };
    expect(messages(validate(over).issues, "bad-settings")).toEqual(['settings: "parallelism" (64) must not exceed "maxParallelism" (32), the number of key groups']);
  });
});

describe("validatePipeline: nodes", () => {
  it("suggests the closest operator type", () => {
    expect(messages(errors(chain(src(), node("x", "filtr", { expression: "true" }), sink())), "unknown-operator-type")).toEqual(['node "x": unknown operator type "filtr" — did you mean "filter"?']);
  });

  it("suggests types by their last part", () => {
    expect(messages(errors(chain(src(), node("x", "kafka"), sink())), "unknown-operator-type")).toEqual(['node "x": unknown operator type "kafka" — did you mean "source.kafka" or "sink.kafka"?']);
  });

  it("lists the known types when nothing is close", () => {
    const [message] = messages(errors(chain(src(), node("x", "quantumFoo"), sink())), "unknown-operator-type");
    expect(message).toMatch(/^node "x": unknown operator type "quantumFoo" \(known types: source\.kafka, source\.file, source\.demo, keyBy, filter, map, union, .*sink\.file.*\)$/);
  });

  it("reports a bad duration with the issue's wording", () => {
    const r = validate(chain(src(), node("k", "keyBy", { field: "cardId" }), node("vel", "velocity", { threshold: 5, windowMs: -5 }), sink()));
    expect(r.issues.filter((i) => i.code === "bad-param")).toEqual([
      {
        severity: "error",
        code: "bad-param",
        nodeId: "vel",
        param: "windowMs",
        message: 'node "vel": param "windowMs" must be a positive duration (milliseconds, or a string such as "250ms", "10s", "10m", "24h", "7d"), got -5',
      },
    ]);
  });

  it("reports missing, mistyped and out-of-range params", () => {
    const doc = chain(node("src", "source.kafka", { topic: 5, startFrom: "begin" }), node("k", "keyBy", { field: "cardId", salt: 1.5 }), node("vel", "velocity", { threshold: 0, windowMs: "1m" }), sink());
    expect(messages(errors(doc), "bad-param")).toEqual([
      'node "src": param "topic" must be text (a string), got 5',
      'node "src": param "startFrom" must be one of "earliest", "latest", "committed", got "begin"',
      'node "src": param "timestampField" is required',
      'node "k": param "salt" must be a whole number of sub-keys, e.g. 8, got 1.5',
      'node "vel": param "threshold" must be positive, got 0',
    ]);
  });

  it("reports an unknown param with the closest name", () => {
    const doc = chain(node("src", "source.file", { path: "a.jsonl", timestampField: "ts", maxOutOfOrdenessMs: 5 }), sink());
    expect(errors(doc)).toEqual([
      { severity: "error", code: "unknown-param", nodeId: "src", param: "maxOutOfOrdenessMs", message: 'node "src": param "maxOutOfOrdenessMs" is not a param of source.file — did you mean "maxOutOfOrdernessMs"?' },
    ]);
  });

  it("reports a whole-node param rule (map needs assignments or expression)", () => {
    expect(messages(errors(chain(src(), node("m", "map"), sink())))).toEqual(['node "m": set either `assignments` (add fields) or `expression` (build the whole record), not both and not neither']);
  });

  it("refuses duplicate node ids", () => {
    const doc = chain(src(), node("f", "filter", { expression: "true" }), sink());
    doc.nodes.push(node("f", "filter", { expression: "false" }));
    expect(messages(errors(doc), "duplicate-node-id")).toEqual(['node "f": 2 nodes have this id — node ids must be unique (they name each node\'s state in checkpoints)']);
  });

  it("refuses a node written for a newer version of its operator", () => {
    const doc = chain(src(), sink());
    doc.nodes[1] = { ...sink(), version: 9 };
    expect(messages(errors(doc))).toEqual(['node "sink": written for sink.file version 9, but this Keyflow knows version 1 — upgrade Keyflow or re-create the node']);
  });
});

describe("validatePipeline: edges and ports", () => {
  it("names a missing node with a suggestion", () => {
    const doc = chain(src(), sink());
    doc.edges = [edge("src", "snk")];
    expect(errors(doc).find((i) => i.code === "edge-unknown-node")).toEqual({
      severity: "error",
      code: "edge-unknown-node",
      edge: "src -> snk",
      message: 'edge "src -> snk": node "snk" does not exist — did you mean "sink"?',
    });
  });

  it("names the valid ports of a missing port", () => {
    const doc = chain(src(), node("k", "keyBy", { field: "cardId" }), node("vel", "velocity", { threshold: 2, windowMs: 1000 }), sink());
    doc.nodes.push(sink("late"));
    doc.edges = [...(doc.edges ?? []), edge("vel:lat", "late"), edge("vel", "k:input")];
    expect(messages(errors(doc), "edge-unknown-port")).toEqual([
      'edge "vel:lat -> late": node "vel" (velocity) has no output port "lat" — did you mean "vel:late"? (its outputs: out, late)',
      'edge "vel -> k:input": node "k" (keyBy) has no input port "input" (its inputs: in)',
    ]);
  });

  it("refuses edges out of a sink and into a source", () => {
    const doc = chain(src(), sink());
    doc.edges = [...(doc.edges ?? []), edge("sink", "src")];
    expect(messages(errors(doc), "edge-unknown-port")).toEqual([
      'edge "sink -> src": node "sink" (sink.file) has no outputs — a sink ends the pipeline, so nothing can start from it',
      'edge "sink -> src": node "src" (source.file) has no inputs — a source starts the pipeline, so nothing can flow into it',
    ]);
  });

  it("refuses a keyed operator fed by an unkeyed stream", () => {
    const r = validate(chain(src(), node("vel", "velocity", { threshold: 5, windowMs: "10m" }), sink()));
    expect(r.issues.filter((i) => i.code === "needs-keyed-input")).toEqual([
      { severity: "error", code: "needs-keyed-input", nodeId: "vel", edge: "src -> vel", message: 'node "vel": velocity needs a keyed input — add a keyBy before it' },
    ]);
  });

  it("keeps a stream keyed through filter and map, but not through union", () => {
    const keyed = chain(src(), node("k", "keyBy", { field: "cardId" }), node("f", "filter", { expression: "amount > 1" }), node("m", "map", { assignments: { y: "1" } }), node("vel", "velocity", { threshold: 5, windowMs: 1000 }), sink());
    expect(messages(errors(keyed))).toEqual([]);
    const merged = chain(src(), node("k", "keyBy", { field: "cardId" }), node("u", "union"), node("vel", "velocity", { threshold: 5, windowMs: 1000 }), sink());
    expect(messages(errors(merged))).toEqual(['node "vel": velocity needs a keyed input — add a keyBy before it']);
  });

  it("refuses a stream kind an input does not take", () => {
    const doc = chain(src(), node("j", "test.keyedOnly"), sink());
    doc.nodes.push(src("ref"));
    doc.edges = [...(doc.edges ?? []), edge("ref", "j:reference")];
    expect(messages(errors(doc))).toEqual(['node "j": input "reference" takes a keyed stream, but "ref" sends an unkeyed stream']);
  });

  it("refuses a required input left unconnected", () => {
    const doc = chain(src(), node("j", "test.keyedOnly"), sink());
    expect(messages(errors(doc))).toEqual(['node "j": its input "reference" is not connected — connect reference records (edge to "j:reference") to it']);
  });

  it("refuses two streams into a single input", () => {
    const doc = chain(src("a"), node("f", "filter", { expression: "true" }), sink());
    doc.nodes.push(src("b"));
    doc.edges = [...(doc.edges ?? []), edge("b", "f")];
    expect(messages(errors(doc))).toEqual(['node "f": input "in" takes one stream, but 2 are connected (from "a", "b") — merge them with a union first']);
  });

  it("accepts several streams into union and sinks", () => {
    const doc = chain(src("a"), node("u", "union"), sink());
    doc.nodes.push(src("b"));
    doc.edges = [...(doc.edges ?? []), edge("b", "u"), edge("b", "sink")];
    expect(errors(doc)).toEqual([]);
  });

  it("warns about an edge listed twice", () => {
    const doc = chain(src(), sink());
    doc.edges = [edge("src", "sink"), edge("src:out", "sink:in")];
    expect(messages(warnings(doc), "duplicate-edge")).toEqual(['edge "src:out -> sink:in" is listed twice; each record would arrive twice — remove one']);
  });
});

describe("validatePipeline: graph", () => {
  it("names the nodes of a cycle", () => {
    const doc = chain(src(), node("a", "filter", { expression: "true" }), node("b", "map", { assignments: { x: "1" } }), node("c", "filter", { expression: "true" }), sink());
    doc.nodes.push(node("u", "union"));
    doc.edges = [edge("src", "u"), edge("u", "a"), edge("a", "b"), edge("b", "c"), edge("c", "u"), edge("c", "sink")];
    expect(errors(doc)).toEqual([
      { severity: "error", code: "cycle", nodeId: "a", message: 'cycle: "a" → "b" → "c" → "u" → "a" — a pipeline must not loop back; remove one of these edges' },
    ]);
  });

  it("refuses a node connected to itself", () => {
    const doc = chain(src(), node("u", "union"), sink());
    doc.edges = [...(doc.edges ?? []), edge("u", "u")];
    expect(messages(errors(doc), "cycle")).toEqual(['edge "u -> u": node "u" is connected to itself — a pipeline must not loop back']);
  });

  it("requires a source and a sink", () => {
    expect(messages(errors(chain(src())))).toEqual(['pipeline: it has no sink — add one (sink.kafka, sink.file) so results go somewhere', 'node "src": it is not connected to anything — connect it or delete it']);
    expect(messages(errors(chain(sink())), "no-source")).toEqual(["pipeline: it has no source — add one (source.kafka, source.file, source.demo) so records flow in"]);
  });

  it("refuses a node connected to nothing, and warns about results going nowhere", () => {
    const doc = chain(src(), node("f", "filter", { expression: "true" }), sink());
    doc.nodes.push(node("lost", "map", { expression: "{}" }));
    doc.nodes.push(node("dead", "filter", { expression: "true" }));
    doc.edges = [...(doc.edges ?? []), edge("src", "dead")];
    expect(messages(errors(doc))).toEqual(['node "lost": it is not connected to anything — connect it or delete it']);
    expect(messages(warnings(doc))).toEqual(['node "dead": its output is not connected, so its results go nowhere — connect it to a sink or another node']);
  });
});

describe("validatePipeline: expressions and fields", () => {
  it("refuses fields the source does not declare, with a suggestion", () => {
    const doc = chain(src("src", ["amount", "country", "cardId", "ts"]), node("f", "filter", { expression: "amout > 5" }), sink());
    expect(errors(doc)).toEqual([
      {
        severity: "error",
        code: "unknown-field",
        nodeId: "f",
        param: "expression",
        message: 'node "f": param "expression": unknown field "amout" — did you mean "amount"?; the input records have "amount", "country", "cardId", "ts"',
      },
    ]);
  });

  it("follows fields through map assignments, keyBy and union", () => {
    const doc = chain(
      src("src", ["amount", "country"]),
      node("m", "map", { assignments: { big: "amount > 1000" } }),
      node("k", "keyBy", { field: "country" }),
      node("u", "union"),
      node("f", "filter", { expression: "big && country == \"SA\" && nope" }),
      sink(),
    );
    expect(messages(errors(doc))).toEqual(['node "f": param "expression": unknown field "nope"; the input records have "amount", "country", "big"']);
    expect(validate(doc).inputFields).toEqual({ m: ["amount", "country"], k: ["amount", "country", "big"], u: ["amount", "country", "big"], f: ["amount", "country", "big"], sink: ["amount", "country", "big"] });
  });

  it("checks nothing when fields are unknown upstream", () => {
    expect(errors(chain(src(), node("f", "filter", { expression: "whatever > 1" }), sink()))).toEqual([]);
  });

  it("reports expression syntax errors with line and column", () => {
    expect(errors(chain(src(), node("f", "filter", { expression: "amount >" }), sink()))).toEqual([
      {
        severity: "error",
        code: "expression-syntax",
        nodeId: "f",
        param: "expression",
        message: 'node "f": param "expression": syntax error at line 1, column 9: unexpected end of the expression (an operand or a closing bracket is missing)',
      },
    ]);
    expect(messages(errors(chain(src(), node("m", "map", { assignments: { x: "1 +" } }), sink())))).toEqual([
      'node "m": param "assignments.x": syntax error at line 1, column 4: unexpected end of the expression (an operand or a closing bracket is missing)',
    ]);
  });
});

describe("validatePipeline: the seeds' state pitfalls (warnings)", () => {
  it("warns about an unbounded key feeding state without TTL", () => {
    const doc = chain(src(), node("byTx", "keyBy", { field: "txId" }), node("f", "filter", { expression: "true" }), node("cnt", "test.counter"), sink());
    expect(warnings(doc)).toEqual([
      {
        severity: "warning",
        code: "unbounded-key",
        nodeId: "byTx",
        param: "field",
        message:
          'node "byTx": key field "txId" is likely unique per record (unbounded key cardinality), and "cnt" (test.counter) keeps state per key without a TTL, so state grows forever — key by the entity you track (cardId, customerId) or bound the state with a TTL',
      },
    ]);
  });

  it("does not warn when the state has a TTL or timers, or the key is bounded", () => {
    expect(warnings(chain(src(), node("byTx", "keyBy", { field: "transaction_id" }), node("w", "test.windowed", { windowMs: "1m", ttlMs: "2m" }), sink()))).toEqual([]);
    expect(messages(warnings(chain(src(), node("byCard", "keyBy", { field: "cardId" }), node("cnt", "test.counter"), sink())))).toEqual([]);
  });

  it("warns about a TTL shorter than its window (param names or the spec's hook)", () => {
    expect(warnings(chain(src(), node("k", "keyBy", { field: "cardId" }), node("w", "test.windowed", { windowMs: "30m", ttlMs: "10m" }), sink()))).toEqual([
      {
        severity: "warning",
        code: "ttl-shorter-than-window",
        nodeId: "w",
        param: "ttlMs",
        message: 'node "w": param "ttlMs" (10m) is shorter than the window it serves (30m), so state expires while the window still needs it — use at least 2× the window (1h)',
      },
    ]);
    expect(messages(warnings(chain(src(), node("k", "keyBy", { field: "cardId" }), node("h", "test.hooked", { spanMs: "1h", keepMs: "90s" }), sink())))).toEqual([
      'node "h": param "keepMs" (1m30s) is shorter than the window it serves (1h), so state expires while the window still needs it — use at least 2× the window (2h)',
    ]);
  });

  it("warns about a late port left unconnected, and not once it is connected", () => {
    const doc = chain(src(), node("k", "keyBy", { field: "cardId" }), node("vel", "velocity", { threshold: 5, windowMs: "10m" }), sink());
    expect(warnings(doc)).toEqual([
      {
        severity: "warning",
        code: "late-port-unconnected",
        nodeId: "vel",
        message: 'node "vel": its "late" output is not connected, so late records end up as dead letters instead of being reviewed — connect "vel:late" to a sink',
      },
    ]);
    doc.nodes.push(sink("review"));
    doc.edges = [...(doc.edges ?? []), edge("vel:late", "review")];
    expect(warnings(doc)).toEqual([]);
  });

  it("warns about a hot key without salt into a stateful operator", () => {
    const doc = chain(src(), node("byCountry", "keyBy", { field: "country" }), node("vel", "velocity", { threshold: 5, windowMs: "10m" }), sink());
    doc.nodes.push(sink("review"));
    doc.edges = [...(doc.edges ?? []), edge("vel:late", "review")];
    expect(warnings(doc)).toEqual([
      {
        severity: "warning",
        code: "hot-key",
        nodeId: "byCountry",
        param: "field",
        message:
          'node "byCountry": key field "country" has few distinct values, so a few hot keys carry all the load of "vel" on one subtask each — set param "salt" (e.g. 8) and combine the partial results, or key by a finer field such as cardId',
      },
    ]);
    const salted = structuredClone(doc);
    (salted.nodes[1] as NodeIn).params = { field: "country", salt: 8 };
    expect(warnings(salted)).toEqual([]);
    // Keyed by country only to reach a sink: no state, no hot spot.
    expect(warnings(chain(src(), node("byCountry", "keyBy", { field: "country" }), sink()))).toEqual([]);
  });
});

describe("validatePipeline: two-stage aggregation (window.combine against its partial stage)", () => {
  const count = { op: "count" };
  const salted = (win: Record<string, unknown>, combine: Record<string, unknown>, winType = "window.tumbling"): PipelineDocumentInput =>
    chain(src(), node("salt", "keyBy", { field: "merchant", salt: 8 }), node("win", winType, { partial: true, ...win }), node("rekey", "keyBy", { field: "key" }), node("comb", "window.combine", combine), sink());

  it("accepts a combine with its partial stage's aggregate and lateness", () => {
    expect(errors(salted({ sizeMs: "1m", aggregate: { op: "sum", field: "amount" }, allowedLatenessMs: "5s" }, { aggregate: { op: "sum", field: "amount" }, allowedLatenessMs: 5000 }))).toEqual([]);
    expect(errors(salted({ sizeMs: "10s", slideMs: "2s", aggregate: count }, { aggregate: count }, "window.hopping"))).toEqual([]);
  });

  it("refuses a different aggregate op or field, naming the node, the param and the partial stage", () => {
    const r = validate(salted({ sizeMs: "1m", aggregate: { op: "sum", field: "amount" } }, { aggregate: { op: "max", field: "amount" } }));
    expect(r.issues.filter((i) => i.code === "combine-mismatch")).toEqual([
      expect.objectContaining({
        severity: "error",
        nodeId: "comb",
        param: "aggregate.op",
        message: 'node "comb": param "aggregate.op" is "max", but its partial stage "win" (window.tumbling) aggregates "sum" — set the same aggregate on both',
      }),
    ]);
    const f = validate(salted({ sizeMs: "1m", aggregate: { op: "sum", field: "amount" } }, { aggregate: { op: "sum", field: "fee" } }));
    expect(messages(f.issues, "combine-mismatch")).toEqual(['node "comb": param "aggregate.field" is "fee", but its partial stage "win" (window.tumbling) aggregates field "amount" — set the same aggregate on both']);
    const none = validate(salted({ sizeMs: "1m", aggregate: { op: "count", field: "id" } }, { aggregate: count }));
    expect(messages(none.issues, "combine-mismatch")).toEqual(['node "comb": param "aggregate.field" is not set, but its partial stage "win" (window.tumbling) aggregates field "id" — set the same aggregate on both']);
  });

  it("refuses a different allowed lateness (the window's partials would be purged too early or kept for nothing)", () => {
    const r = validate(salted({ sizeMs: "1m", aggregate: count, allowedLatenessMs: "30s" }, { aggregate: count }));
    expect(r.issues.filter((i) => i.code === "combine-mismatch")).toEqual([
      expect.objectContaining({ nodeId: "comb", param: "allowedLatenessMs", message: 'node "comb": param "allowedLatenessMs" is 0ms, but its partial stage "win" (window.tumbling) allows 30s — set the same allowedLatenessMs on both' }),
    ]);
  });

  it("refuses partial stages with different windows merged into one combine", () => {
    const doc: PipelineDocumentInput = {
      format: "keyflow.pipeline/v1",
      name: "t",
      nodes: [
        src(),
        node("salt", "keyBy", { field: "merchant", salt: 4 }),
        node("w1", "window.tumbling", { sizeMs: "1m", aggregate: count, partial: true }),
        node("w2", "window.hopping", { sizeMs: "1m", slideMs: "30s", aggregate: count, partial: true }),
        node("u", "union"),
        node("rekey", "keyBy", { field: "key" }),
        node("comb", "window.combine", { aggregate: count }),
        sink(),
      ],
      edges: [edge("src", "salt"), edge("salt", "w1"), edge("salt", "w2"), edge("w1", "u"), edge("w2", "u"), edge("u", "rekey"), edge("rekey", "comb"), edge("comb", "sink")],
    };
    expect(messages(validate(doc).issues, "combine-mismatch")).toEqual([
      'node "comb": its partial stages "w1" (window.tumbling, 1m) and "w2" (window.hopping, 1m every 30s) have different windows — a combine merges the partials of one window',
    ]);
  });

  it("refuses a combine whose input is not a window with partial: true, or is not re-keyed by key", () => {
    const noPartial = chain(src(), node("salt", "keyBy", { field: "merchant", salt: 8 }), node("win", "window.tumbling", { sizeMs: "1m", aggregate: count }), node("rekey", "keyBy", { field: "key" }), node("comb", "window.combine", { aggregate: count }), sink());
    expect(messages(validate(noPartial).issues, "combine-mismatch")).toEqual([
      'node "comb": its input comes from "win" (window.tumbling) without param "partial": true, so it receives results, not partial aggregates — set "partial": true on "win"',
    ]);
    const direct = chain(src(), node("k", "keyBy", { field: "merchant" }), node("comb", "window.combine", { aggregate: count }), sink());
    expect(messages(validate(direct).issues, "combine-mismatch")).toEqual([
      'node "comb": its input does not come from a window.tumbling or window.hopping with "partial": true — window.combine is the second stage of a two-stage aggregation (keyBy with salt → window with partial → keyBy on "key" → window.combine)',
    ]);
    const wrongKey = salted({ sizeMs: "1m", aggregate: count }, { aggregate: count });
    (wrongKey.nodes[3] as NodeIn).params = { field: "subKey" };
    expect(messages(validate(wrongKey).issues, "combine-mismatch")).toEqual([
      'node "comb": its input is keyed by "rekey" on field "subKey", so partials of one key never meet — key them by "key" (the key without its salt)',
    ]);
    const notRekeyed = chain(src(), node("salt", "keyBy", { field: "merchant", salt: 8 }), node("win", "window.tumbling", { sizeMs: "1m", aggregate: count, partial: true }), node("comb", "window.combine", { aggregate: count }), sink());
    expect(messages(validate(notRekeyed).issues, "combine-mismatch")).toEqual([
      'node "comb": its partial stage "win" (window.tumbling) is not keyed again before it, so each salted sub-key stays apart — add keyBy { field: "key" } between them',
    ]);
  });
});

describe("validatePipeline: window.hopping with a slide longer than its size", () => {
  it("refuses it, naming the node and the param", () => {
    const r = validate(chain(src(), node("k", "keyBy", { field: "cardId" }), node("h", "window.hopping", { sizeMs: "10s", slideMs: "1m", aggregate: { op: "count" } }), sink()));
    expect(r.ok).toBe(false);
    expect(r.issues.filter((i) => i.severity === "error")).toEqual([
      expect.objectContaining({ code: "bad-param", nodeId: "h", param: "slideMs", message: expect.stringMatching(/^node "h": param "slideMs" must not be longer than sizeMs \(10s\), got 1m: .*gaps/) }),
    ]);
  });
});

describe("resolvePortKinds", () => {
  it("resolves keyed after keyBy, `same` through filter, stream after union; unknown when unconnected", () => {
    const doc = chain(src(), node("k", "keyBy", { field: "cardId" }), node("f", "filter", { expression: "true" }), node("u", "union"), sink());
    doc.nodes.push(node("loose", "filter", { expression: "true" }));
    const kinds = resolvePortKinds({ nodes: doc.nodes.map((n) => ({ id: n.id, type: n.type })), edges: doc.edges ?? [] });
    expect(kinds).toEqual({
      src: { out: "stream" },
      k: { out: "keyed", errors: "stream" },
      f: { out: "keyed", errors: "stream" },
      u: { out: "stream" },
      sink: {},
      loose: { errors: "stream" },
    });
  });
});

describe("canConnect", () => {
  const graph = {
    nodes: [
      { id: "src", type: "source.file" },
      { id: "k", type: "keyBy" },
      { id: "f", type: "filter" },
      { id: "vel", type: "velocity" },
      { id: "out", type: "sink.file" },
    ],
    edges: [edge("src", "k"), edge("k", "f"), edge("f", "vel")],
  };
  const can = (from: string, to: string) => canConnect(graph, from, to, { specs });

  it("allows a valid connection, including side outputs into sinks", () => {
    expect(can("vel", "out")).toEqual({ ok: true });
    expect(can("vel:late", "out")).toEqual({ ok: true });
  });

  it("refuses an unkeyed stream into a keyed operator, with the fix", () => {
    const free = { ...graph, edges: [edge("src", "k"), edge("k", "f")] };
    expect(canConnect(free, "src", "vel", { specs })).toEqual({ ok: false, reason: 'node "vel": velocity needs a keyed input — add a keyBy before it' });
    expect(canConnect(free, "f", "vel", { specs })).toEqual({ ok: true });
  });

  it("refuses an input that is already taken, a loop, a self-edge and a duplicate", () => {
    expect(can("k", "vel")).toEqual({ ok: false, reason: 'input "in" of node "vel" already takes a stream from "f" — merge streams with a union first' });
    expect(can("vel", "k")).toEqual({ ok: false, reason: 'input "in" of node "k" already takes a stream from "src" — merge streams with a union first' });
    expect(canConnect({ ...graph, nodes: [...graph.nodes, { id: "u", type: "union" }], edges: [...graph.edges, edge("vel", "u")] }, "u", "u", { specs })).toEqual({
      ok: false,
      reason: 'node "u" cannot be connected to itself',
    });
    expect(canConnect({ ...graph, nodes: [...graph.nodes, { id: "u", type: "union" }], edges: [edge("src", "u"), edge("u", "k")] }, "k", "u", { specs })).toEqual({
      ok: false,
      reason: 'connecting "k" to "u" would make a cycle — a pipeline must not loop back',
    });
    expect(can("k", "f")).toEqual({ ok: false, reason: '"k" is already connected to "f"' });
  });

  it("names the ports when one does not exist", () => {
    expect(can("out", "vel")).toEqual({ ok: false, reason: 'edge "out -> vel": node "out" (sink.file) has no outputs — a sink ends the pipeline, so nothing can start from it' });
    expect(can("vel:errors", "out")).toEqual({ ok: false, reason: 'edge "vel:errors -> out": node "vel" (velocity) has no output port "errors" (its outputs: out, late)' });
  });
});

describe("formatIssue", () => {
  it("prints one line with the severity", () => {
    expect(formatIssue({ severity: "error", code: "bad-param", nodeId: "vel", param: "windowMs", message: 'node "vel": param "windowMs" must be a positive duration' })).toBe(
      'error: node "vel": param "windowMs" must be a positive duration',
    );
  });
});

describe("fixtures (pipelines as the canvas saves them)", () => {
  // The fixtures' text through Vite's glob import (no file-system calls in the engine package).
  const fixtures = import.meta.glob<string>("./fixtures/**/*.{json,txt}", { query: "?raw", import: "default", eager: true });
  const read = (path: string): string => {
    const text = fixtures[`./fixtures/${path}`];
    if (text === undefined) throw new Error(`no fixture ${path}`);
    return text;
  };
  const names = (kind: string) => Object.keys(fixtures).filter((k) => k.startsWith(`./fixtures/${kind}/`) && k.endsWith(".json")).map((k) => k.slice(`./fixtures/${kind}/`.length));

  it.each(names("valid"))("valid/%s has no issue", (file) => {
    const r = validatePipeline(JSON.parse(read(`valid/${file}`)));
    expect(r.issues.map(formatIssue)).toEqual([]);
    expect(r.ok).toBe(true);
  });

  it.each(names("invalid"))("invalid/%s gives the issues in its .issues.txt", (file) => {
    const r = validatePipeline(JSON.parse(read(`invalid/${file}`)));
    const expected = read(`invalid/${file.replace(/\.json$/, ".issues.txt")}`).trim().split("\n");
    expect(r.ok).toBe(false);
    expect(r.issues.map(formatIssue)).toEqual(expected);
  });
});
