import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSandboxedProcessFunction, SandboxError, type Effects, type ProcessElementInput, type SandboxedProcessFunction, type SandboxOptions } from "./index";
import { sandboxCallWallMs } from "./sandbox";

const CANARY = `canary-${process.pid}-${Math.floor(performance.now())}`;
const open: SandboxedProcessFunction[] = [];

function sandbox(code: string, options?: SandboxOptions): SandboxedProcessFunction {
  const fn = createSandboxedProcessFunction(code, options);
  open.push(fn);
  return fn;
}

const input = (record: ProcessElementInput["record"] = {}, over: Partial<ProcessElementInput> = {}): ProcessElementInput => ({
  key: "card-1",
  record,
  timestamp: 1_700_000_000_000,
  watermark: Number.NEGATIVE_INFINITY,
  processingTime: 1_700_000_000_500,
  ...over,
});

async function rejection(p: Promise<unknown>): Promise<SandboxError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(SandboxError);
    return e as SandboxError;
  }
  throw new Error("expected the call to fail");
}

/** Whatever an escape attempt reports must carry nothing of the host: no pid, no environment. */
function expectNoHostValue(effects: Effects, childPid: number | undefined): void {
  const text = JSON.stringify(effects);
  expect(text).not.toContain(CANARY);
  expect(text).not.toMatch(new RegExp(`\\b${process.pid}\\b`));
  if (childPid !== undefined) expect(text).not.toMatch(new RegExp(`\\b${childPid}\\b`));
  expect(text).not.toMatch(/\bPATH\b|HOME|DATABASE_URL|node_modules|\/usr\/|child\.mjs/);
}

beforeAll(() => {
  process.env.KEYFLOW_SANDBOX_CANARY = CANARY;
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((fn) => fn.close()));
});
afterAll(() => {
  delete process.env.KEYFLOW_SANDBOX_CANARY;
});

describe("process.custom sandbox: the function works", () => {
  it("keeps a counter in state, emits, registers timers and fires onTimer", async () => {
    const fn = sandbox(`
      interface Rec { value: { amount: number }; timestamp: number; key: string | undefined }
      export function processElement(record: Rec, ctx: any): void {
        const count = ctx.state.value<number>("count", { ttlMs: 3_600_000 });
        const n = (count.value() ?? 0) + 1;
        count.update(n);
        const seen = ctx.state.list("amounts");
        seen.add(record.value.amount);
        const byMerchant = ctx.state.map("m");
        byMerchant.put("acme", (byMerchant.get("acme") ?? 0) + record.value.amount);
        if (n === 1) ctx.timers.registerEventTime(record.timestamp + 60_000, "reset");
        if (n >= 3) ctx.sideOutput("alerts", { key: ctx.key ?? null, n });
        console.log("count", n, { wm: ctx.watermark() });
        ctx.output({ key: ctx.key ?? null, n, total: seen.get().reduce((a: number, b: number) => a + b, 0), pt: ctx.processingTime() });
      }
      export function onTimer(timer: { time: number; tag: string }, ctx: any): void {
        if (timer.tag === "reset") ctx.state.value("count").clear();
        ctx.output({ fired: timer.time, tag: timer.tag, key: ctx.key ?? null });
      }
    `);
    expect(await fn.ready()).toEqual({ hasOnTimer: true });

    const first = await fn.processElement(input({ amount: 10 }));
    expect(first.outputs).toEqual([{ value: { key: "card-1", n: 1, total: 10, pt: 1_700_000_000_500 }, timestamp: 1_700_000_000_000 }]);
    expect(first.state).toEqual([
      { name: "count", cell: { kind: "value", value: 1 }, ttlMs: 3_600_000 },
      { name: "amounts", cell: { kind: "list", values: [10] } },
      { name: "m", cell: { kind: "map", entries: { acme: 10 } } },
    ]);
    expect(first.touched.map((t) => `${t.name}:${t.kind}`)).toEqual(["count:value", "amounts:list", "m:map"]);
    expect(first.timers).toEqual([{ op: "register", domain: "event", time: 1_700_000_060_000, tag: "reset" }]);
    expect(first.logs).toEqual(['count 1 {"wm":null}']);

    // The host owns the state: it sends the key's state back in with the next record.
    const third = await fn.processElement(
      input(
        { amount: 5 },
        {
          watermark: 1_700_000_000_000,
          state: { count: { kind: "value", value: 2 }, amounts: { kind: "list", values: [10, 20] }, m: { kind: "map", entries: { acme: 30 } } },
        },
      ),
    );
    expect(third.outputs[0]?.value).toMatchObject({ n: 3, total: 35 });
    expect(third.sideOutputs).toEqual([{ port: "alerts", value: { key: "card-1", n: 3 }, timestamp: 1_700_000_000_000 }]);
    expect(third.state.find((s) => s.name === "m")?.cell).toEqual({ kind: "map", entries: { acme: 35 } });
    expect(third.timers).toEqual([]);

    const fired = await fn.onTimer({ key: "card-1", time: 1_700_000_060_000, domain: "event", tag: "reset", watermark: 1_700_000_060_000, state: { count: { kind: "value", value: 3 } } });
    expect(fired.state).toEqual([{ name: "count", cell: null }]);
    expect(fired.outputs).toEqual([{ value: { fired: 1_700_000_060_000, tag: "reset", key: "card-1" }, timestamp: 1_700_000_060_000 }]);
  });

  it("reports a syntax error with its line and column, before any process starts", () => {
    let err: unknown;
    try {
      createSandboxedProcessFunction("export function processElement(record, ctx) {\n  const x = ;\n}\n");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SandboxError);
    const e = err as SandboxError;
    expect(e.kind).toBe("syntax");
    expect(e.line).toBe(2);
    expect(e.column).toBe(13);
    expect(e.message).toMatch(/syntax error at line 2, column 13: Expression expected/);
  });

  it("reports an error only V8 finds (an early error) as a syntax error at its TypeScript position", async () => {
    const fn = sandbox("type T = number;\ninterface I { a: T }\nexport function processElement(): void {\n  const y;\n}\n");
    const e = await rejection(fn.ready());
    expect(e.kind).toBe("syntax");
    expect(e.line).toBe(4);
    expect(e.message).toMatch(/syntax error at line 4, column \d+: Missing initializer in const declaration/);
    // Final: every call fails the same way without restarting anything.
    expect((await rejection(fn.processElement(input()))).kind).toBe("syntax");
  });

  it("turns a thrown exception into an `exception` error at the user's line, keeping what happened before the throw", async () => {
    const fn = sandbox(`export function processElement(record: any, ctx: any): void {
  ctx.state.value("seen").update(true);
  if (record.value.bad) {
    throw new RangeError("amount out of range: " + record.value.amount);
  }
  ctx.output({ ok: true });
}`);
    const e = await rejection(fn.processElement(input({ bad: true, amount: -3 })));
    expect(e.kind).toBe("exception");
    expect(e.message).toBe("process.custom: processElement threw RangeError: amount out of range: -3 (process.custom.ts:4:11)");
    expect(e.line).toBe(4);
    expect(e.userStack).toMatch(/process\.custom\.ts:4:11/);
    expect(e.userStack).not.toMatch(/prelude|child\.mjs/);
    expect(e.partialEffects?.state).toEqual([{ name: "seen", cell: { kind: "value", value: true } }]);
    expect((await fn.processElement(input({}))).outputs).toEqual([{ value: { ok: true }, timestamp: 1_700_000_000_000 }]);
  });

  it("rejects misuse of ctx with a clear message: non-JSON output, async functions, wrong side ports, stack overflow", async () => {
    const fn = sandbox(`
      export function processElement(record: any, ctx: any): any {
        switch (record.value.what) {
          case "date": ctx.output({ at: new Date(0) }); break;
          case "nan": ctx.state.value("x").update({ a: NaN }); break;
          case "port": ctx.sideOutput("secret", { a: 1 }); break;
          case "async": return (async () => { ctx.output({ late: true }); })();
          case "recurse": { const f = (n: number): number => f(n + 1) + 1; f(0); break; }
        }
      }`);
    const msg = async (what: string) => (await rejection(fn.processElement(input({ what })))).message;
    expect(await msg("date")).toMatch(/ctx\.output value\.at is not a plain object/);
    expect(await msg("nan")).toMatch(/state "x"\.a is NaN: JSON has no NaN/);
    expect(await msg("port")).toMatch(/no side output "secret"; use "alerts" or "errors"/);
    expect(await msg("async")).toMatch(/processElement must be synchronous/);
    expect(await msg("recurse")).toMatch(/RangeError: Maximum call stack size exceeded/);
  });

  it("fails every call with an `init` error when the module's top level throws", async () => {
    const fn = sandbox(`const table: Record<string, number> = JSON.parse("{not json");\nexport function processElement(): void {}`);
    const e = await rejection(fn.processElement(input()));
    expect(e.kind).toBe("init");
    expect(e.message).toMatch(/^process\.custom: loading the code failed: SyntaxError: .*JSON/);
    expect(e.line).toBe(1);
    expect((await rejection(fn.processElement(input()))).kind).toBe("init");
    expect(fn.starts).toBe(1);
  });
});

describe("process.custom sandbox: limits", () => {
  it("stops an infinite loop at the timeout; the next call works", async () => {
    const fn = sandbox(
      `let calls = 0;
       export function processElement(record: any, ctx: any): void {
         calls++;
         if (record.value.loop) { while (true) {} }
         if (record.value.micro) { Promise.resolve().then(() => { for (;;) {} }); }
         ctx.output({ calls });
       }`,
      { timeoutMs: 50 },
    );
    expect((await fn.processElement(input())).outputs[0]?.value).toEqual({ calls: 1 });
    const pid = fn.pid;
    const t0 = performance.now();
    const e = await rejection(fn.processElement(input({ loop: true })));
    expect(e.kind).toBe("timeout");
    expect(e.message).toMatch(/processElement went over its CPU budget of 50 ms \(an endless loop\?\)/);
    // Stopped at the wall-clock backstop, not left to run (a bound on a hang, not a benchmark).
    expect(performance.now() - t0).toBeLessThan(sandboxCallWallMs(50) + 10_000);
    // A loop in a microtask is caught too.
    expect((await rejection(fn.processElement(input({ micro: true })))).kind).toBe("timeout");
    // Same process, fresh isolate: module-level variables start over.
    expect((await fn.processElement(input())).outputs[0]?.value).toEqual({ calls: 1 });
    expect(fn.pid).toBe(pid);
  });

  it("judges a call by its CPU time: a call the machine held up still succeeds, one that computes past its budget fails", async () => {
    // Computes for about 3.5 ns × n of CPU.
    const spin = `export function processElement(record: any, ctx: any): void {
         let x = 0;
         for (let i = 0; i < record.value.n; i++) x = (x + i) % 1_000_003;
         ctx.output({ x });
       }`;
    const fn = sandbox(spin, { timeoutMs: 1000 });
    await fn.ready();
    const pid = fn.pid!;
    // An overloaded machine, made certain: the process is stopped for 1.5 s in the middle of a short
    // call. By wall-clock time that call would be over its 1 s budget; by CPU time it is not.
    const t0 = performance.now();
    const held = fn.processElement(input({ n: 2e7 }));
    await new Promise((r) => setTimeout(r, 20));
    process.kill(pid, "SIGSTOP");
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(pid, "SIGCONT");
    expect((await held).outputs).toHaveLength(1);
    // The stop fell inside the call (had the call answered first, it would be back well before).
    expect(performance.now() - t0).toBeGreaterThan(1400);
    expect(fn.pid).toBe(pid);

    // A call that finishes, but computes for longer than its budget, is refused all the same.
    const strict = sandbox(spin, { timeoutMs: 5 });
    const e = await rejection(strict.processElement(input({ n: 5e7 })));
    expect(e.kind).toBe("timeout");
    expect(e.message).toMatch(/went over its CPU budget of 5 ms/);
    expect((await strict.processElement(input({ n: 10 }))).outputs).toHaveLength(1);
  });

  it("stops a memory bomb at the memory limit without touching the runner; the next call works", async () => {
    const fn = sandbox(
      `export function processElement(record: any, ctx: any): void {
         if (record.value.bomb) { const a: number[][] = []; while (true) a.push(new Array(1e6).fill(1)); }
         ctx.output({ ok: true });
       }`,
      { memoryLimitMb: 64, timeoutMs: 5000 },
    );
    await fn.ready();
    const rssBefore = process.memoryUsage().rss;
    const e = await rejection(fn.processElement(input({ bomb: true })));
    expect(e.kind).toBe("memory");
    expect(e.message).toMatch(/went over the sandbox's 64 MB memory limit|out of memory/);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(50 * 2 ** 20);
    expect((await fn.processElement(input())).outputs).toEqual([{ value: { ok: true }, timestamp: 1_700_000_000_000 }]);
  });

  it("survives a fatal V8 out-of-memory that kills the sandbox process: only that process dies, the next call works", async () => {
    // A Map of small objects makes V8 abort the whole process (isolated-vm cannot catch it): the
    // reason the sandbox runs in its own process rather than in a worker thread.
    const fn = sandbox(
      `export function processElement(record: any, ctx: any): void {
         if (record.value.bomb) { const m = new Map(); let i = 0; while (true) m.set(i++, { i }); }
         ctx.output({ ok: true });
       }`,
      { memoryLimitMb: 32, timeoutMs: 10_000 },
    );
    await fn.ready();
    const e = await rejection(fn.processElement(input({ bomb: true })));
    expect(e.kind).toBe("memory");
    expect((await fn.processElement(input())).outputs).toHaveLength(1);
  });

  it("runs the sandbox process with an empty environment under Node's permission model", async () => {
    const fn = sandbox(`export function processElement(): void {}`);
    await fn.ready();
    const pid = fn.pid!;
    const { readFile } = await import("node:fs/promises");
    const environ = await readFile(`/proc/${pid}/environ`, "utf8").catch(() => undefined);
    if (environ === undefined) return; // no procfs here
    // Only what fork() itself adds for the IPC channel.
    const names = environ.split("\0").filter(Boolean).map((kv) => kv.replace(/=.*/s, ""));
    for (const name of names) expect(name).toMatch(/^(NODE_CHANNEL_\w+|TZ)$/);
    expect(environ).not.toContain(CANARY);
    const argv = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
    expect(argv).toContain("--no-node-snapshot");
    expect(argv.some((a) => a === "--experimental-permission" || a === "--permission")).toBe(true);
    expect(argv.filter((a) => a.startsWith("--allow-")).map((a) => a.replace(/=.*/, "")).sort()).toEqual([
      "--allow-addons",
      "--allow-fs-read",
      "--allow-fs-read",
      "--allow-fs-read",
    ]);
  });

  it("kills a sandbox process that stops answering, and restarts it for the next call", async () => {
    const fn = sandbox(`export function processElement(record: any, ctx: any): void { ctx.output({ ok: true }); }`, { timeoutMs: 50, killGraceMs: 200 });
    await fn.ready();
    const pid = fn.pid;
    expect(pid).toBeTypeOf("number");
    process.kill(pid!, "SIGSTOP"); // a hang isolated-vm's own timeout cannot break
    const t0 = performance.now();
    const e = await rejection(fn.processElement(input()));
    expect(e.kind).toBe("timeout");
    expect(e.message).toMatch(/did not answer within 1200 ms; the sandbox process was killed \(SIGKILL\)/);
    expect(performance.now() - t0).toBeLessThan(sandboxCallWallMs(50) + 200 + 10_000);
    expect((await fn.processElement(input())).outputs).toHaveLength(1);
    expect(fn.pid).not.toBe(pid);
    expect(fn.starts).toBe(2);
  });

  it("reports a crashed sandbox process for the call in flight and restarts it", async () => {
    const fn = sandbox(
      `export function processElement(record: any, ctx: any): void {
         if (record.value.spin) { let x = 0; for (let i = 0; i < 3e8; i++) x += i; ctx.output({ x }); return; }
         ctx.output({ ok: true });
       }`,
      { timeoutMs: 5000 },
    );
    await fn.ready();
    const pid = fn.pid!;
    const call = fn.processElement(input({ spin: true }));
    setTimeout(() => process.kill(pid, "SIGKILL"), 30);
    const e = await rejection(call);
    expect(e.kind).toBe("crash");
    expect(e.message).toMatch(/the sandbox process exited \(SIGKILL\) during processElement; it restarts/);
    expect((await fn.processElement(input())).outputs[0]?.value).toEqual({ ok: true });
    expect(fn.pid).not.toBe(pid);
  });

  it("treats forged effects as invalid output", async () => {
    const fn = sandbox(`
      export function processElement(record: any, ctx: any): void {
        ctx.output({ a: 1 });
        // The prelude serializes its answer with JSON.stringify: hook it once, at the top, to forge the whole answer.
        if (record.value.forge) {
          (Object.prototype as any).toJSON = function () {
            delete (Object.prototype as any).toJSON;
            return { ok: true, effects: { outputs: "all of them" } };
          };
        }
      }`);
    const e = await rejection(fn.processElement(input({ forge: true })));
    expect(e.kind).toBe("invalid-output");
    expect(e.message).toMatch(/not valid/);
  });

  it("rejects calls after close()", async () => {
    const fn = sandbox(`export function processElement(): void {}`);
    await fn.processElement(input());
    await fn.close();
    expect((await rejection(fn.processElement(input()))).kind).toBe("closed");
  });
});

describe("process.custom sandbox: escapes that work against node:vm fail here", () => {
  /** Runs `body` (the inside of processElement, which must call report(x)) and returns what it reported. */
  async function attempt(body: string, prelude = "", calls = 1): Promise<{ reports: unknown[]; effects: Effects[]; pid: number | undefined }> {
    const fn = sandbox(
      `${prelude}
       export function processElement(this: any, record: any, ctx: any): void {
         const report = (x: unknown): void => {
           let s: string;
           try { s = typeof x === "string" ? x : typeof x === "function" ? "function " + String((x as any).name) : JSON.stringify(x) ?? String(x); }
           catch (e) { s = "unprintable: " + String(e); }
           ctx.output({ got: s });
         };
         const tryIt = (f: () => unknown): unknown => { try { return f(); } catch (e: any) { return "threw " + (e?.name ?? "") + ": " + (e?.message ?? String(e)); } };
         ${body}
       }`,
      { timeoutMs: 500 },
    );
    const effects: Effects[] = [];
    for (let i = 0; i < calls; i++) {
      try {
        effects.push(await fn.processElement(input({ call: i })));
      } catch (e) {
        expect(e).toBeInstanceOf(SandboxError);
        expect(JSON.stringify({ message: (e as SandboxError).message, stack: (e as SandboxError).userStack })).not.toContain(CANARY);
      }
    }
    const reports = effects.flatMap((e) => e.outputs.map((o) => o.value.got));
    for (const e of effects) expectNoHostValue(e, fn.pid);
    return { reports, effects, pid: fn.pid };
  }

  it("this.constructor.constructor('return process')() finds no process", async () => {
    const { reports } = await attempt(`
      report(tryIt(() => this.constructor.constructor("return process")()));
      report(tryIt(() => this.constructor.constructor("return typeof process")()));
      report(tryIt(() => this.constructor.constructor("return process.pid")()));`);
    expect(reports).toEqual(["threw ReferenceError: process is not defined", "undefined", "threw ReferenceError: process is not defined"]);
  });

  it("({}).constructor.constructor('return globalThis.process')() and every object handed in lead to the isolate's own Function", async () => {
    const { reports } = await attempt(`
      report(tryIt(() => ({}).constructor.constructor("return globalThis.process")()));
      for (const o of [ctx, ctx.output, ctx.state, ctx.state.value("x"), ctx.timers, record, record.value, report]) {
        report(tryIt(() => (o as any).constructor.constructor("return [typeof globalThis.process, typeof require, typeof Buffer, typeof globalThis.ivm]")()));
      }
      report(tryIt(() => Object.getOwnPropertyNames(globalThis).filter((n) => !STANDARD.has(n))));`, `
      const STANDARD = new Set(["Object","Function","Array","Number","parseFloat","parseInt","Infinity","NaN","undefined","Boolean","String","Symbol","Date","Promise","RegExp","Error","AggregateError","EvalError","RangeError","ReferenceError","SyntaxError","TypeError","URIError","globalThis","JSON","Math","Intl","ArrayBuffer","Uint8Array","Int8Array","Uint16Array","Int16Array","Uint32Array","Int32Array","Float32Array","Float64Array","Uint8ClampedArray","BigUint64Array","BigInt64Array","DataView","Map","BigInt","Set","WeakMap","WeakSet","Proxy","Reflect","decodeURI","decodeURIComponent","encodeURI","encodeURIComponent","escape","unescape","eval","isFinite","isNaN","console"]);`);
    expect(reports[0]).toBe("undefined");
    expect(reports.slice(1, 9)).toEqual(Array(8).fill('["undefined","undefined","undefined","undefined"]'));
    expect(reports[9]).toBe("[]");
  });

  it("Error.prepareStackTrace frames expose no host object (getThis / getFunction)", async () => {
    const prelude = `
      const seen: unknown[] = [];
      (Error as any).prepareStackTrace = (_e: unknown, frames: any[]) => {
        for (const f of frames) { seen.push(f.getThis(), f.getFunction(), f.getFileName()); }
        return frames.map((f) => String(f.getFileName()) + ":" + String(f.getFunctionName())).join(" | ");
      };`;
    const { reports } = await attempt(
      `
      // V8 calls prepareStackTrace when .stack is first read.
      const stackOf = (f: () => unknown): unknown => { try { f(); return "no error"; } catch (e: any) { return e.stack; } };
      if (record.value.call === 0) {
        stackOf(() => (null as any).x);                    // a TypeError inside user code
        stackOf(() => ctx.output(null));                   // a TypeError thrown by the sandbox's own code
        stackOf(() => ctx.state.value("").value());        // ditto
        stackOf(() => JSON.parse("{"));                    // from a builtin
        stackOf(() => [1].map(() => { throw new Error("x"); }));
        report("frames " + seen.length);
        return;
      }
      if (record.value.call === 1) throw new Error("read by the sandbox"); // the prelude reads its stack
      const found: string[] = [];
      for (const v of seen) {
        if (v === undefined || v === null || typeof v === "string") { if (typeof v === "string") found.push("file " + v); continue; }
        const r = tryIt(() => (v as any).constructor.constructor("return typeof process + '/' + typeof require")());
        found.push(typeof v + " " + String(r) + " " + String(tryIt(() => typeof (v as any).process)));
      }
      report(found);`,
      prelude,
      3,
    );
    expect(reports[0]).toMatch(/^frames \d+$/);
    const found = JSON.parse(String(reports[1])) as string[];
    expect(found.length).toBeGreaterThan(0);
    for (const f of found) {
      // Every frame is the isolate's: its objects' Function finds no process, its files are the user's or the prelude's.
      expect(f).toMatch(/^(file (process\.custom\.js|keyflow-prelude\.js)|(object|function) undefined\/undefined undefined)$/);
    }
  });

  it("a Promise `then` / species hijack captures nothing from the host", async () => {
    const prelude = `
      const captured: unknown[] = [];
      const origThen = Promise.prototype.then;
      Promise.prototype.then = function (this: any, ...args: any[]) { captured.push(this, ...args); return origThen.apply(this, args as any); } as any;
      Object.defineProperty(Promise, Symbol.species, { get() { captured.push("species"); return Promise; } });
      class Evil extends Promise<unknown> {}
      Object.defineProperty(Object.prototype, "then", { get() { captured.push("then getter on " + typeof this); return undefined; }, configurable: true });`;
    const { reports } = await attempt(
      `
      if (record.value.call === 0) { report("armed"); return; }
      if (record.value.call === 1) { void Evil; report("async"); return; }
      const found: string[] = [];
      for (const v of captured) {
        if (typeof v === "function" || (typeof v === "object" && v !== null)) {
          found.push(String(tryIt(() => (v as any).constructor.constructor("return typeof process")())));
        } else found.push(String(v));
      }
      report(found);`,
      prelude,
      3,
    );
    expect(reports.slice(0, 2)).toEqual(["armed", "async"]);
    const found = JSON.parse(String(reports[2])) as string[];
    // The host never hands a promise, a thenable or a callback to the isolate, so nothing was captured
    // but the isolate's own lookups, none of which reach a process.
    for (const f of found) expect(f).not.toMatch(/object|function/);
  });

  it("import('fs'), require('child_process') and a top-level import all fail", async () => {
    const { reports } = await attempt(
      `
      if (record.value.call === 0) {
        import("node:fs").then((m) => { state.dynamic = "resolved " + typeof (m as any).readFileSync; }, (e) => { state.dynamic = "rejected: " + e.message; });
        (0, eval)("import('node:fs')").then(() => { state.evalImport = "resolved"; }, (e: any) => { state.evalImport = "rejected: " + e.message; });
        report(tryIt(() => require("child_process").execSync("id").toString()));
        report(tryIt(() => (globalThis as any).require("child_process")));
        report(tryIt(() => (module as any).constructor._load("child_process")));
        return;
      }
      report(state);`,
      `declare const require: any; declare const module: any; const state: Record<string, string> = {};`,
      2,
    );
    expect(reports[0]).toBe('threw Error: require("child_process"): modules are not available in process.custom (no imports, files, network or environment)');
    expect(reports[1]).toBe("threw TypeError: globalThis.require is not a function");
    expect(reports[2]).toMatch(/^threw TypeError: .*_load is not a function/);
    expect(JSON.parse(String(reports[3]))).toEqual({
      dynamic: 'rejected: require("node:fs"): modules are not available in process.custom (no imports, files, network or environment)',
      evalImport: "rejected: Not supported",
    });

    const fn = sandbox(`import { readFileSync } from "node:fs";\nexport function processElement(r: any, ctx: any): void { ctx.output({ f: readFileSync("/etc/passwd", "utf8") }); }`);
    const e = await rejection(fn.processElement(input()));
    expect(e.kind).toBe("init");
    expect(e.message).toMatch(/require\("node:fs"\): modules are not available/);
  });

  it("globalThis.process, env and host globals are absent", async () => {
    const { reports } = await attempt(`
      const g: any = globalThis;
      report(tryIt(() => [typeof g.process, typeof g.Buffer, typeof g.setTimeout, typeof g.fetch, typeof g.queueMicrotask, typeof g.WebAssembly, typeof g.SharedArrayBuffer, typeof g.Atomics]));
      report(tryIt(() => g.process.env.KEYFLOW_SANDBOX_CANARY));
      report(tryIt(() => (Function("return this")() as any).process));`);
    expect(reports[0]).toBe(JSON.stringify(Array(8).fill("undefined")));
    expect(reports[1]).toMatch(/^threw TypeError: Cannot read properties of undefined/);
    expect(reports[2]).toBe("undefined");
  });

  it("has no clock and no randomness: Date.now(), new Date() and Math.random() throw, so replays are identical", async () => {
    const body = `
      report(tryIt(() => Date.now()));
      report(tryIt(() => new Date().getTime()));
      report(tryIt(() => Date()));
      report(tryIt(() => Math.random()));
      report(tryIt(() => new (Object.getPrototypeOf(new Date(0)).constructor)().getTime()));
      report(tryIt(() => new Intl.DateTimeFormat("en-US").format()));
      report(new Date(ctx.timestamp).toISOString());
      report(String(Date.UTC(2024, 0, 1)));
      report(String(new Date(0).getTimezoneOffset()) + " " + new Date(0).getHours());`;
    const a = await attempt(body);
    const b = await attempt(body);
    expect(a.reports).toEqual(b.reports);
    for (const r of a.reports.slice(0, 6)) expect(r).toMatch(/^threw Error: .* is not available in process\.custom/);
    expect(a.reports[0]).toMatch(/Use ctx\.timestamp/);
    // The process runs with TZ=UTC: local-time arithmetic is the same on every machine.
    expect(a.reports.slice(6)).toEqual(["2023-11-14T22:13:20.000Z", "1704067200000", "0 0"]);
  });
});
