import fc from "fast-check";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { defineOperator } from "../../core/spec";
import { LocalJob } from "../../runtime/job";
import { OperatorTestHarness } from "../../testing/harness";
import { NUM_RUNS, arrivalOrder, eventsArb, jittersArb, ofKey, run, runWithRestore } from "../shared/test-support";
import {
  NO_SANDBOX_MESSAGE,
  createCustomOperator,
  processCustomSpec,
  processCustomTemplate,
  processCustomTypeDefinitions,
  type CustomFunctionFactory,
  type CustomProcessFunction,
} from "./process-custom";

/** What the runner's sandbox would produce from the template: the same logic, as a JS function. */
const templateAsJs: CustomProcessFunction = {
  processElement(record, ctx) {
    const count = ctx.state.value<number>("count");
    const n = (count.value() ?? 0) + 1;
    count.update(n);
    if (n === 1) ctx.timers.registerEventTime(record.timestamp + 3_600_000, "reset");
    if (n === 10) ctx.sideOutput("alerts", { key: ctx.key ?? null, ts: record.timestamp, count: n });
    ctx.output(record.value);
  },
  onTimer(timer, ctx) {
    if (timer.tag === "reset") ctx.state.value<number>("count").clear();
  },
};

/** The spec as the runner runs it: create() given the sandbox's factory. */
function withFactory(factory: CustomFunctionFactory) {
  return defineOperator({ ...processCustomSpec, create: (params, init) => createCustomOperator(params, init, factory) });
}

/** A running count per key with a reset timer, an alert at `every` records and a throw on `boom`. */
const counter = (every: number, resetAfter: number): CustomProcessFunction => ({
  processElement(record, ctx) {
    if (record.value.boom === true) throw new Error("boom");
    const count = ctx.state.value<number>("count");
    const seen = ctx.state.list<number>("seen");
    const n = (count.value() ?? 0) + 1;
    count.update(n);
    seen.add(record.timestamp);
    if (n === 1) ctx.timers.registerEventTime(record.timestamp + resetAfter, "reset");
    if (n % every === 0) ctx.sideOutput("alerts", { key: ctx.key ?? null, n, late: ctx.watermark() >= record.timestamp });
    ctx.output({ n, ts: ctx.timestamp });
  },
  onTimer(timer, ctx) {
    ctx.output({ reset: timer.time, tag: timer.tag, seen: ctx.state.list<number>("seen").get().length });
    ctx.state.value<number>("count").clear();
    ctx.state.list<number>("seen").clear();
  },
});

const events = eventsArb(fc.record({ amount: fc.integer({ min: 0, max: 9 }) }));
const BOUND = 10;

describe("process.custom", () => {
  it("refuses to run without the runner's sandbox, with a message saying so", () => {
    const h = () => OperatorTestHarness.forSpec(processCustomSpec, {}, { keyed: true, nodeId: "mine" });
    expect(h).toThrow(`node "mine": ${NO_SANDBOX_MESSAGE}`);
  });

  it("runs the injected function with state, timers and side outputs, and restores exactly", () => {
    const spec = withFactory(() => counter(3, 20));
    fc.assert(
      fc.property(events, jittersArb(BOUND), fc.nat(), (evs, jitters, at) => {
        const arrivals = arrivalOrder(evs, jitters, BOUND);
        const whole = run(spec, {}, arrivals, BOUND);
        expect(runWithRestore(spec, {}, arrivals, BOUND, at % (arrivals.length + 1))).toEqual(whole);
        // Key isolation: with the watermark held back until the end, a key alone gives the same output.
        const late = 1_000;
        expect(ofKey(run(spec, {}, arrivals, late), "a")).toEqual(ofKey(run(spec, {}, arrivals.filter((e) => e.key === "a"), late), "a"));
        // Model: per key, counts restart after each reset timer.
        const outs = whole.filter((o) => o.port === "out" && "n" in o.value);
        expect(outs.length).toBe(arrivals.length);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it("sends an exception of the user code to `errors` and goes on", () => {
    const spec = withFactory(() => counter(100, 1_000));
    const h = OperatorTestHarness.forSpec(spec, {}, { keyed: true, nodeId: "c" });
    h.processElement({ boom: true }, 1, "k").processElement({}, 2, "k");
    expect(h.output().map((o) => [o.port, o.value])).toEqual([
      ["errors", { error: 'node "c": processElement threw: boom', record: { boom: true } }],
      ["out", { n: 1, ts: 2 }],
    ]);
  });

  it("the template runs as documented: output every record, alert at the 10th, reset after an hour", () => {
    const h = OperatorTestHarness.forSpec(withFactory(() => templateAsJs), {}, { keyed: true });
    for (let i = 0; i < 10; i++) h.processElement({ i }, i, "card");
    h.processWatermark(3_600_000).processElement({ i: 10 }, 3_600_001, "card").endOfInput();
    expect(h.outputOf("alerts").map((o) => o.value)).toEqual([{ key: "card", ts: 9, count: 10 }]);
    expect(h.outputOf("out")).toHaveLength(11);
    expect(h.stateStats()).toMatchObject({ keys: 0, timers: 0 });
  });

  it("the type definitions for the editor type-check the template under strict TypeScript", () => {
    const files = new Map([
      ["/context.d.ts", processCustomTypeDefinitions],
      ["/user.ts", processCustomTemplate],
    ]);
    const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], types: [] };
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    const getSourceFile = host.getSourceFile.bind(host);
    host.readFile = (f) => files.get(f) ?? readFile(f);
    host.fileExists = (f) => files.has(f) || ts.sys.fileExists(f);
    host.getSourceFile = (f, v) => (files.has(f) ? ts.createSourceFile(f, files.get(f) ?? "", v) : getSourceFile(f, v));
    const program = ts.createProgram(["/context.d.ts", "/user.ts"], options, host);
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(diagnostics).toEqual([]);
  });

  it("runs in a LocalJob with the factory injected through operatorServices (and refuses without it)", () => {
    const pipeline = {
      format: "keyflow.pipeline/v1",
      name: "custom",
      nodes: [
        { id: "pay", type: "source.file", params: { path: "pay.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
        { id: "by", type: "keyBy", params: { field: "card" } },
        { id: "mine", type: "process.custom", params: { code: "// the user's code" } },
        { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
        { id: "alerts", type: "sink.file", params: { path: "alerts.jsonl" } },
      ],
      edges: [
        { from: "pay", to: "by" },
        { from: "by", to: "mine" },
        { from: "mine", to: "out" },
        { from: "mine:alerts", to: "alerts" },
      ],
    };
    expect(() => LocalJob.create(pipeline)).toThrow(`node "mine": ${NO_SANDBOX_MESSAGE}`);

    const calls: Array<[string, string]> = [];
    const customFunctionFactory: CustomFunctionFactory = (code, site) => {
      calls.push([code, site.nodeId]);
      return counter(2, 100);
    };
    const feed = (job: LocalJob, from: number, to: number) => {
      for (let i = from; i < to; i++) job.pushValue("pay", { card: i % 2 === 0 ? "a" : "b", ts: i }, { partition: 0 });
    };
    const job = LocalJob.create(pipeline, { operatorServices: { customFunctionFactory } });
    expect(calls).toEqual([["// the user's code", "mine"]]);
    feed(job, 0, 3);
    const restored = LocalJob.restore(pipeline, job.snapshot(), { operatorServices: { customFunctionFactory } });
    feed(restored, 3, 5);
    restored.endOfInput("pay");
    const sunk = (j: LocalJob, node: string) => j.drain().flatMap((e) => (e.kind === "sink" && e.nodeId === node ? [e.value] : []));
    expect(sunk(job, "out")).toEqual([
      { n: 1, ts: 0 },
      { n: 1, ts: 1 },
      { n: 2, ts: 2 },
    ]);
    const after = restored.drain();
    expect(after.flatMap((e) => (e.kind === "sink" && e.nodeId === "out" ? [e.value] : []))).toEqual([
      { n: 2, ts: 3 },
      { n: 3, ts: 4 },
      { reset: 100, tag: "reset", seen: 3 },
      { reset: 101, tag: "reset", seen: 2 },
    ]);
    expect(after.flatMap((e) => (e.kind === "sink" && e.nodeId === "alerts" ? [e.value] : []))).toEqual([{ key: "b", n: 2, late: false }]);
  });

  it("declares a keyed input, the alerts and errors side outputs, and a default code", () => {
    expect(processCustomSpec.requiresKeyedInput).toBe(true);
    expect(processCustomSpec.outputs.map((o) => o.id)).toEqual(["out", "alerts", "errors"]);
    expect(processCustomSpec.params.parse({}).code).toBe(processCustomTemplate);
  });
});
