// process.custom for real: the user's TypeScript in the sandbox, driven synchronously by the
// engine through the sync bridge. First the operator in a harness (same behaviour as the function
// run in-process, re-runs after a restore, every failure to `errors`), then the `keyflow run` CLI
// end to end (a counter with state and a timer, an endless loop, a kill and a resume).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { createCustomOperator, defineOperator, processCustomSpec, type CustomFunctionFactory, type CustomProcessFunction, type JsonObject } from "@keyflow/operators";
import { OperatorTestHarness, type HarnessOutput } from "@keyflow/operators/testing";
import { eventually, runCli, startCli } from "../../test/run-cli";
import { createCustomFunctionFactory, type CustomFunctionFactoryOptions, type SandboxedFunctions } from "./custom-function-factory";

const open: SandboxedFunctions[] = [];
function sandboxes(opts: CustomFunctionFactoryOptions = {}): SandboxedFunctions {
  const s = createCustomFunctionFactory(opts);
  open.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** process.custom as the runner runs it: create() given a factory. */
const specWith = (factory: CustomFunctionFactory) => defineOperator({ ...processCustomSpec, create: (params, init) => createCustomOperator(params, init, factory) });

interface Event {
  key: string;
  ts: number;
  value: JsonObject;
}

/** Feeds events as a bounded-out-of-orderness source would (watermark = max ts − bound − 1 after each). */
function feed(h: OperatorTestHarness, events: readonly Event[], bound: number, from = 0, to = events.length): void {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < to; i++) {
    const e = events[i] as Event;
    max = Math.max(max, e.ts);
    if (i < from) continue;
    h.processElement(e.value, e.ts, e.key);
    if (max - bound - 1 > h.watermark()) h.processWatermark(max - bound - 1);
  }
}

/** Per port, in order; `errors` records without their message (it names positions in the code). */
function byPort(out: readonly HarnessOutput[]): Record<string, unknown[]> {
  const ports: Record<string, unknown[]> = {};
  for (const o of out) {
    const v = o.port === "errors" ? { record: o.value.record } : o.value;
    (ports[o.port] ??= []).push({ key: o.key, ts: o.timestamp, v });
  }
  return ports;
}

// The same logic twice: as the analyst's TypeScript (run in the sandbox) and as a JS function (run in-process).
const COUNTER_TS = `
export function processElement(record: InputRecord, ctx: Context): void {
  const count = ctx.state.value<number>("count");
  const seen = ctx.state.list<number>("seen", { ttlMs: 15 });
  const amounts = ctx.state.map<number>("amounts", { ttlMs: 25 });
  const n = (count.value() ?? 0) + 1;
  count.update(n);
  if (record.value.boom === true) throw new Error("boom");
  seen.add(record.timestamp);
  const a = "x" + String(record.value.amount);
  amounts.put(a, (amounts.get(a) ?? 0) + 1);
  if (n % 4 === 0) amounts.remove("x0");
  if (n === 1) ctx.timers.registerEventTime(record.timestamp + 20, "reset");
  if (n % 3 === 0) ctx.sideOutput("alerts", { key: ctx.key ?? null, n, late: ctx.watermark() >= record.timestamp });
  ctx.output({ n, ts: ctx.timestamp, seen: seen.get(), amounts: Object.fromEntries(amounts.entries()) });
}

export function onTimer(timer: Timer, ctx: Context): void {
  ctx.output({ reset: timer.time, tag: timer.tag, seen: ctx.state.list<number>("seen", { ttlMs: 15 }).get() });
  ctx.state.value<number>("count").clear();
  ctx.state.list<number>("seen", { ttlMs: 15 }).clear();
}
`;
const counterJs: CustomProcessFunction = {
  processElement(record, ctx) {
    const count = ctx.state.value<number>("count");
    const seen = ctx.state.list<number>("seen", { ttlMs: 15 });
    const amounts = ctx.state.map<number>("amounts", { ttlMs: 25 });
    const n = (count.value() ?? 0) + 1;
    count.update(n);
    if (record.value.boom === true) throw new Error("boom");
    seen.add(record.timestamp);
    const a = "x" + String(record.value.amount);
    amounts.put(a, (amounts.get(a) ?? 0) + 1);
    if (n % 4 === 0) amounts.remove("x0");
    if (n === 1) ctx.timers.registerEventTime(record.timestamp + 20, "reset");
    if (n % 3 === 0) ctx.sideOutput("alerts", { key: ctx.key ?? null, n, late: ctx.watermark() >= record.timestamp });
    ctx.output({ n, ts: ctx.timestamp, seen: [...seen.get()], amounts: Object.fromEntries(amounts.entries()) });
  },
  onTimer(timer, ctx) {
    ctx.output({ reset: timer.time, tag: timer.tag, seen: [...ctx.state.list<number>("seen", { ttlMs: 15 }).get()] });
    ctx.state.value<number>("count").clear();
    ctx.state.list<number>("seen", { ttlMs: 15 }).clear();
  },
};

const eventsArb = fc
  .array(
    fc.record({
      key: fc.constantFrom("a", "b", "c"),
      ts: fc.integer({ min: 0, max: 80 }),
      value: fc.record({ amount: fc.integer({ min: 0, max: 3 }), boom: fc.integer({ min: 0, max: 9 }).map((x) => x === 0) }),
    }),
    { minLength: 1, maxLength: 30 },
  )
  // Arrival order: within the bound of 10 ms.
  .map((es) => es.map((e, i) => ({ ...e, arrival: e.ts + (i % 11) })).sort((x, y) => x.arrival - y.arrival));

describe("process.custom through the sandbox, in the engine", () => {
  it("behaves as the same function run in-process: value, list and map state with TTL, timers, side outputs, an exception's writes, restore", () => {
    const inProcess = specWith(() => counterJs);
    // One bridge for every run (each node still gets its own sandbox process).
    const sandboxed = specWith(sandboxes().factory);
    const restoring = (spec: typeof inProcess, params: { code?: string }, events: readonly Event[], cut: number) => {
      const first = OperatorTestHarness.forSpec(spec, params, { keyed: true });
      feed(first, events, 10, 0, cut);
      // A new job from the checkpoint: for the sandbox, a new function, which learns the state names again.
      const second = OperatorTestHarness.restore(spec, params, first.snapshot(), { keyed: true });
      feed(second, events, 10, cut);
      second.endOfInput();
      return { output: [...first.output(), ...second.output()], stats: second.stateStats() };
    };
    fc.assert(
      fc.property(eventsArb, fc.nat(), (events, cutAt) => {
        const cut = cutAt % (events.length + 1);
        const whole = OperatorTestHarness.forSpec(inProcess, {}, { keyed: true });
        feed(whole, events, 10);
        whole.endOfInput();
        const expected = restoring(inProcess, {}, events, cut);
        expect(byPort(expected.output)).toEqual(byPort(whole.output()));

        const got = restoring(sandboxed, { code: COUNTER_TS }, events, cut);
        expect(byPort(got.output)).toEqual(byPort(expected.output));
        expect(got.stats).toEqual(expected.stats);
      }),
      // Each run starts sandbox processes: few runs, no shrinking.
      { numRuns: 5, seed: 20_260_101, endOnFailure: true },
    );
  }, 120_000);

  it("re-runs a call whose first use of a state name finds restored data, once; the dropped run left nothing on the host", () => {
    const code = `
      let calls = 0; // module-level: not state, not checkpointed
      export function processElement(record: InputRecord, ctx: Context): void {
        calls++;
        const count = ctx.state.value<number>("count");
        const n = (count.value() ?? 0) + 1;
        count.update(n);
        if (n === 1) ctx.timers.registerEventTime(record.timestamp + 1000, "first");
        ctx.output({ n, calls });
      }
      export function onTimer(timer: Timer, ctx: Context): void {
        ctx.output({ timer: timer.time, count: ctx.state.value<number>("count").value() ?? 0 });
      }`;
    const before = sandboxes();
    const h1 = OperatorTestHarness.forSpec(specWith(before.factory), { code }, { keyed: true });
    h1.processElement({}, 1, "a").processElement({}, 2, "a").processElement({}, 3, "b");
    expect(h1.output().map((o) => o.value)).toEqual([
      { n: 1, calls: 1 },
      { n: 2, calls: 2 },
      { n: 1, calls: 3 },
    ]);
    expect(before.stats().reruns).toBe(0); // names are learned as they are first written: nothing to re-run

    const after = sandboxes();
    const h2 = OperatorTestHarness.restore(specWith(after.factory), { code }, h1.snapshot(), { keyed: true });
    h2.processElement({}, 4, "a").processElement({}, 5, "b").processElement({}, 6, "c").endOfInput();
    // "a" read "count" before the sandbox knew the name: run again with the restored value. The
    // module variable saw both runs (calls 2); the first run's output and timer were dropped.
    expect(h2.output().map((o) => [o.key, o.value])).toEqual([
      ["a", { n: 3, calls: 2 }],
      ["b", { n: 2, calls: 3 }],
      ["c", { n: 1, calls: 4 }],
      ["a", { timer: 1001, count: 3 }],
      ["b", { timer: 1003, count: 2 }],
      ["c", { timer: 1006, count: 1 }],
    ]);
    expect(after.stats()).toEqual({ calls: 7, reruns: 1, failures: 0 });
  });

  it("sends each failure of the user's code to `errors` with its message and goes on: exception (its writes kept), timeout, memory", () => {
    const code = `
      export function processElement(record: InputRecord, ctx: Context): void {
        const count = ctx.state.value<number>("count");
        count.update((count.value() ?? 0) + 1);
        ctx.output({ before: record.value.kind as string });
        if (record.value.kind === "throw") throw new RangeError("too big");
        if (record.value.kind === "loop") for (;;) {}
        if (record.value.kind === "bomb") { const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1)); }
        ctx.output({ count: count.value() ?? 0 });
      }`;
    const s = sandboxes({ timeoutMs: 300, memoryLimitMb: 64 });
    const h = OperatorTestHarness.forSpec(specWith(s.factory), { code }, { keyed: true, nodeId: "mine" });
    for (const kind of ["ok", "throw", "loop", "bomb", "ok"]) h.processElement({ kind }, 1, "k");
    const out = h.output().map((o) => [o.port, o.port === "errors" ? o.value.error : o.value]);
    expect(out).toEqual([
      ["out", { before: "ok" }],
      ["out", { count: 1 }],
      // An exception keeps what the call did before it threw, as in-process.
      ["out", { before: "throw" }],
      ["errors", 'node "mine": processElement threw: RangeError: too big (process.custom.ts:6:50)'],
      // A stopped call did nothing (its isolate is gone): not even its first write.
      ["errors", expect.stringMatching(/^node "mine": processElement threw: process\.custom: processElement went over its CPU budget of 300 ms \(an endless loop\?\)/)],
      ["errors", expect.stringMatching(/^node "mine": processElement threw: process\.custom: processElement (went over the sandbox's 64 MB memory limit|ran the sandbox process out of memory)/)],
      ["out", { before: "ok" }],
      ["out", { count: 3 }],
    ]);
    expect(h.outputOf("errors").map((o) => o.value.record)).toEqual([{ kind: "throw" }, { kind: "loop" }, { kind: "bomb" }]);
    expect(s.stats()).toMatchObject({ failures: 3, reruns: 0 });
  }, 60_000);

  it("a sandbox process that dies during a call sends that record to `errors`; the next record gets a new process", () => {
    const code = `
      export function processElement(record: InputRecord, ctx: Context): void {
        if (record.value.spin === true) for (;;) {}
        ctx.output({ ok: true });
      }`;
    const s = sandboxes({ timeoutMs: 20_000 });
    const h = OperatorTestHarness.forSpec(specWith(s.factory), { code }, { keyed: true, nodeId: "mine" });
    h.processElement({}, 1, "k");
    const pid = s.bridge.call<number>("pid", { id: 1 });
    // The job thread is blocked during the call: a shell kills the sandbox process from outside.
    spawn("sh", ["-c", `sleep 0.5; kill -9 ${pid}`], { stdio: "ignore" }).unref();
    h.processElement({ spin: true }, 2, "k").processElement({}, 3, "k");
    expect(h.output().map((o) => [o.port, o.port === "errors" ? o.value.error : o.value])).toEqual([
      ["out", { ok: true }],
      ["errors", 'node "mine": processElement threw: process.custom: the sandbox process exited (SIGKILL) during processElement; it restarts for the next call'],
      ["out", { ok: true }],
    ]);
    expect(s.bridge.call<number>("pid", { id: 1 })).not.toBe(pid);
  }, 60_000);

  it("survives a restart of the bridge's worker: the function is opened again, its state is the host's", async () => {
    const code = `
      export function processElement(record: InputRecord, ctx: Context): void {
        const count = ctx.state.value<number>("count");
        count.update((count.value() ?? 0) + 1);
        ctx.output({ count: count.value() ?? 0 });
      }`;
    const s = sandboxes();
    const h = OperatorTestHarness.forSpec(specWith(s.factory), { code }, { keyed: true });
    h.processElement({}, 1, "k");
    const pid = s.bridge.call<number>("pid", { id: 1 });
    await s.bridge.restart();
    h.processElement({}, 2, "k");
    expect(h.output().map((o) => o.value)).toEqual([{ count: 1 }, { count: 2 }]);
    expect(s.bridge.generation).toBe(2);
    // The old worker's sandbox process went with it (its IPC channel closed: it exits).
    await eventually(() => !isAlive(pid), "the old sandbox process to exit", 10_000);
  });

  it("broken code fails the node's creation with the position, so the job does not start", () => {
    const s = sandboxes();
    const create = (code: string) => () => OperatorTestHarness.forSpec(specWith(s.factory), { code }, { keyed: true, nodeId: "mine" });
    expect(create("export function processElement(record, ctx) {\n  ctx.output({ a: 1 }\n}")).toThrow(/^node "mine": process\.custom: syntax error at line 3, column 1: ',' expected\.$/);
    expect(create(`throw new Error("at load");\nexport function processElement() {}`)).toThrow(/^node "mine": process\.custom: loading the code failed: Error: at load \(process\.custom\.ts:1:7\)$/);
    expect(create(`export const x = 1;`)).toThrow(/the code must export processElement\(record, ctx\)/);
  });

  it("the sandbox call itself is side-effect free on the host: the same input gives the same effects", () => {
    const code = `
      export function processElement(record: InputRecord, ctx: Context): void {
        const seen = ctx.state.list<string>("seen");
        seen.add(record.value.id as string);
        ctx.timers.registerEventTime(record.timestamp + 10, "t");
        ctx.output({ seen: seen.get() });
      }`;
    const s = sandboxes();
    s.factory(code, { nodeId: "x" });
    const input = { key: "k", record: { id: "r2" }, timestamp: 5, watermark: 0, state: { seen: { kind: "list", values: ["r1"] } } };
    const call = () => s.bridge.call("call", { id: 1, kind: "element", input });
    const first = call();
    expect(call()).toEqual(first);
    expect(first).toMatchObject({
      ok: true,
      effects: { outputs: [{ value: { seen: ["r1", "r2"] } }], state: [{ name: "seen", cell: { kind: "list", values: ["r1", "r2"] } }] },
    });
  });
});

/** Whether `pid` still runs (an exited process nobody reaped, a zombie, does not: it holds no memory). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // The worker that forked it is gone, so nobody waits for it: it stays a zombie until the runner exits.
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : "";
  return !/^\d+ \(.*\) Z /.test(stat);
}

// ---- keyflow run --------------------------------------------------------------------------------

const T0 = 1_767_225_600_000;

/** A running count and total per card; a summary one minute of event time after its first payment. */
const CARD_COUNTER = `// A running count and total per card; a summary one minute of event time after its first payment.
export function processElement(record: InputRecord, ctx: Context): void {
  const count = ctx.state.value<number>("count");
  const total = ctx.state.value<number>("total");
  const n = (count.value() ?? 0) + 1;
  count.update(n);
  total.update((total.value() ?? 0) + (record.value.amount as number));
  if (n === 1) ctx.timers.registerEventTime(record.timestamp + 60_000, "summary");
  if (n === 3) ctx.sideOutput("alerts", { card: ctx.key ?? null, third: record.value.id as string });
  ctx.output({ card: ctx.key ?? null, n, id: record.value.id as string });
}

export function onTimer(timer: Timer, ctx: Context): void {
  const count = ctx.state.value<number>("count");
  const total = ctx.state.value<number>("total");
  ctx.output({ card: ctx.key ?? null, summary: true, count: count.value() ?? 0, total: total.value() ?? 0, at: timer.time });
  count.clear();
  total.clear();
}
`;

/** A folder with pipeline.json (source.file → keyBy(card) → process.custom → sink.file, alerts to a second sink) and payments.jsonl. */
function pipelineDir(code: string, payments: readonly JsonObject[], name = "card-counter", withAlerts = true): string {
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-custom-"));
  const doc = {
    format: "keyflow.pipeline/v1",
    name,
    settings: { checkpointIntervalMs: 60_000 },
    nodes: [
      { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "counter", type: "process.custom", params: { code } },
      { id: "out", type: "sink.file", params: { path: "out/counts.jsonl" } },
      ...(withAlerts ? [{ id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } }] : []),
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "counter" },
      { from: "counter", to: "out" },
      ...(withAlerts ? [{ from: "counter:alerts", to: "alerts" }] : []),
    ],
  };
  writeFileSync(path.join(dir, "pipeline.json"), JSON.stringify(doc, null, 2));
  writeFileSync(path.join(dir, "payments.jsonl"), payments.map((p) => JSON.stringify(p)).join("\n") + "\n");
  mkdirSync(path.join(dir, "out"), { recursive: true });
  return dir;
}

const lines = (file: string): string[] => readFileSync(file, "utf8").split("\n").filter((l) => l !== "");

describe("keyflow run: a pipeline with process.custom, sandboxed", () => {
  it("source.file → keyBy → process.custom (count, total, an event-time summary timer, an alert) → sink.file: the exact output", async () => {
    const rows: Array<[string, string, number, number]> = [
      ["p1", "c1", 10, 0],
      ["p2", "c2", 20, 1_000],
      ["p3", "c1", 30, 2_000],
      ["p4", "c1", 40, 3_000],
      ["p5", "c2", 5, 30_000],
      ["p6", "c1", 1, 61_000],
      ["p7", "c2", 7, 70_000],
    ];
    const dir = pipelineDir(
      CARD_COUNTER,
      rows.map(([id, card, amount, dt]) => ({ id, card, amount, ts: T0 + dt })),
    );
    const r = await runCli(["run", path.join(dir, "pipeline.json")]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(lines(path.join(dir, "out", "counts.jsonl"))).toEqual([
      '{"card":"c1","n":1,"id":"p1"}',
      '{"card":"c2","n":1,"id":"p2"}',
      '{"card":"c1","n":2,"id":"p3"}',
      '{"card":"c1","n":3,"id":"p4"}',
      '{"card":"c2","n":2,"id":"p5"}',
      // p6 (ts +61 s) moves the watermark past c1's summary at +60 s, after p6 is counted.
      '{"card":"c1","n":4,"id":"p6"}',
      '{"card":"c1","summary":true,"count":4,"total":81,"at":1767225660000}',
      '{"card":"c2","n":3,"id":"p7"}',
      '{"card":"c2","summary":true,"count":3,"total":32,"at":1767225661000}',
    ]);
    expect(lines(path.join(dir, "out", "alerts.jsonl"))).toEqual(['{"card":"c1","third":"p4"}', '{"card":"c2","third":"p7"}']);
    expect(r.stdout).toMatch(/pipeline "card-counter" finished/);
    expect(r.stdout).toMatch(/^counter\s+process\.custom\s+7\s+11\s+0\s+0$/m);
    expect(r.stdout).toMatch(/dead letters: 0 /);
  }, 60_000);

  it("an endless loop in the code sends each of its records to the dead letters with the timeout message; the job finishes", async () => {
    const code = `export function processElement(record: InputRecord, ctx: Context): void {
  if (record.value.loop === true) for (;;) {}
  ctx.output({ id: record.value.id as string });
}
`;
    const ids = ["a", "b", "c", "d", "e"];
    const dir = pipelineDir(
      code,
      ids.map((id, i) => ({ id, card: `c${i % 2}`, loop: id === "b" || id === "d", ts: T0 + i })),
      "looper",
      false,
    );
    const t0 = performance.now();
    const r = await runCli(["run", path.join(dir, "pipeline.json")]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(performance.now() - t0).toBeLessThan(30_000);
    expect(lines(path.join(dir, "out", "counts.jsonl"))).toEqual(['{"id":"a"}', '{"id":"c"}', '{"id":"e"}']);
    const dead = lines(path.join(dir, "out", "looper.dlq.jsonl")).map((l) => JSON.parse(l) as { node: string; port: string; reason: string; value: { id: string } });
    expect(dead.map((d) => [d.node, d.port, d.value.id])).toEqual([
      ["counter", "errors", "b"],
      ["counter", "errors", "d"],
    ]);
    for (const d of dead) {
      expect(d.reason).toBe(
        'node "counter": processElement threw: process.custom: processElement went over its CPU budget of 50 ms (an endless loop?); it was stopped, and the next call starts from a fresh isolate',
      );
    }
    expect(r.stdout).toMatch(/dead letters: 2 -> out\/looper\.dlq\.jsonl/);
  }, 60_000);

  it("killed mid-run and resumed from its checkpoint, the custom function's state and timers carry over: the output equals an uninterrupted run's", async () => {
    const payments: JsonObject[] = [];
    for (let i = 0; i < 8_000; i++) payments.push({ id: `p${i}`, card: `c${(i * 7) % 150}`, amount: (i * 31) % 97, ts: T0 + i * 100 });
    const dir = pipelineDir(CARD_COUNTER, payments);
    const pipeline = path.join(dir, "pipeline.json");

    const reference = await runCli(["run", pipeline]);
    expect(reference.code).toBe(0);
    const expected = readFileSync(path.join(dir, "out", "counts.jsonl"), "utf8");
    const expectedAlerts = readFileSync(path.join(dir, "out", "alerts.jsonl"), "utf8");
    expect(expected.split("\n").filter((l) => l.includes('"summary":true')).length).toBeGreaterThan(100);

    const ckpt = path.join(dir, "ckpt");
    const run = startCli(["run", pipeline, "--checkpoint-dir", ckpt, "--checkpoint-interval", "5"]);
    await eventually(() => existsSync(ckpt) && readdirSync(ckpt).some((n) => n.startsWith("chk-") && existsSync(path.join(ckpt, n, "_committed"))), "a first checkpoint");
    run.child.kill("SIGKILL");
    const killed = await run.done;
    expect(killed.signal).toBe("SIGKILL");

    const resumed = await runCli(["run", pipeline, "--checkpoint-dir", ckpt]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(/resumed from checkpoint \d+/);
    expect(readFileSync(path.join(dir, "out", "counts.jsonl"), "utf8")).toBe(expected);
    expect(readFileSync(path.join(dir, "out", "alerts.jsonl"), "utf8")).toBe(expectedAlerts);
  }, 180_000);
});
