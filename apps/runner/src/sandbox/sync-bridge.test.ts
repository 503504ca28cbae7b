import { afterEach, describe, expect, it } from "vitest";
import { BridgeError, SyncBridge, type SyncBridgeOptions } from "./sync-bridge";

const HANDLER = new URL("../../test/bridge-handler.ts", import.meta.url);
const open: SyncBridge[] = [];

function bridge(opts: Partial<SyncBridgeOptions> = {}): SyncBridge {
  const b = new SyncBridge({ handler: HANDLER, ...opts });
  open.push(b);
  return b;
}

function failure(f: () => unknown): BridgeError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(BridgeError);
    return e as BridgeError;
  }
  throw new Error("expected the call to fail");
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.close()));
});

describe("SyncBridge: a synchronous call into a worker thread's asynchronous code", () => {
  it("returns the handler's value synchronously, while the worker does asynchronous work", () => {
    const b = bridge();
    expect(b.call("echo", { a: [1, "two", null, { three: true }] })).toEqual({ a: [1, "two", null, { three: true }] });
    const t0 = performance.now();
    expect(b.call("sleep", { ms: 60, value: "slept" })).toBe("slept");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
    expect(b.generation).toBe(1);
  });

  it("answers calls one at a time, in order (each answer is the one of its call)", () => {
    const b = bridge();
    const got: number[] = [];
    for (let i = 0; i < 2_000; i++) got.push(b.call<number>("next", null));
    expect(got).toEqual(Array.from({ length: 2_000 }, (_, i) => i + 1));
    for (let i = 0; i < 200; i++) expect(b.call("echo", { i, pad: "x".repeat(i * 37) })).toEqual({ i, pad: "x".repeat(i * 37) });
    expect(b.chunkedAnswers).toBe(0);
  });

  it("chunks answers larger than the shared buffer, exactly, across multi-byte UTF-8 boundaries", () => {
    const b = bridge({ bufferBytes: 64 * 1024 });
    const expected = (chars: number) => {
      const alphabet = ["a", "é", "€", "𝄞"];
      let s = "";
      for (let i = 0; s.length < chars; i++) s += alphabet[i % alphabet.length];
      return s.slice(0, chars);
    };
    let overBuffer = 0;
    for (const chars of [10, 20_000, 33_000, 64 * 1024, 3_000_000]) {
      const want = expected(chars);
      expect(b.call<string>("big", { chars })).toBe(want);
      if (Buffer.byteLength(JSON.stringify({ ok: true, value: want })) > 64 * 1024) overBuffer++;
    }
    expect(overBuffer).toBe(3);
    expect(b.chunkedAnswers).toBe(overBuffer);
    // The buffer is reused: small calls still work after a chunked one, and a large request goes too.
    expect(b.call("echo", "small")).toBe("small");
    expect(b.call("length", { text: "y".repeat(8_000_000) })).toBe(8_000_000);
  });

  it("a method that throws is a `remote` error naming it; the worker goes on", () => {
    const b = bridge();
    const thread = (b.call("echo", 1), b.threadId);
    const e = failure(() => b.call("fail", { message: "out of range" }));
    expect(e.kind).toBe("remote");
    expect(e.message).toMatch(/"fail" failed: RangeError: out of range/);
    expect(failure(() => b.call("nope", null)).message).toMatch(/no method "nope"/);
    expect(b.call("echo", 2)).toBe(2);
    expect(b.threadId).toBe(thread);
    expect(b.generation).toBe(1);
  });

  it("a worker that crashes (uncaught exception) fails the call at once with the reason; the next call gets a new worker", () => {
    const b = bridge({ callTimeoutMs: 30_000 });
    b.call("echo", 0);
    const t0 = performance.now();
    const e = failure(() => b.call("crash", null));
    expect(e.kind).toBe("crash");
    expect(e.message).toMatch(/crashed during "crash": uncaught Error: kaboom; it restarts for the next call/);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(b.call("echo", "again")).toBe("again");
    expect(b.generation).toBe(2);
  });

  it("a worker that exits says so, with its exit code", () => {
    const b = bridge({ callTimeoutMs: 30_000 });
    const e = failure(() => b.call("exit", { code: 7 }));
    expect(e.kind).toBe("crash");
    expect(e.message).toMatch(/exited with code 7/);
    expect(b.call("next", null)).toBe(1); // a fresh worker: module state starts over
  });

  it("a worker that never answers (a hang, or a busy loop) is stopped at the deadline; the next call gets a new worker", () => {
    const b = bridge({ callTimeoutMs: 300, startAllowanceMs: 30_000 });
    b.call("echo", 0); // the first call pays for loading the worker
    for (const method of ["hang", "spin"]) {
      const t0 = performance.now();
      const e = failure(() => b.call(method, null));
      expect(e.kind).toBe("timeout");
      expect(e.message).toMatch(new RegExp(`gave no answer to "${method}" within 300 ms`));
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect(b.call("echo", method)).toBe(method);
    }
    expect(b.generation).toBe(3);
  });

  it("a handler that fails to load fails the first call with its reason", () => {
    const b = bridge({ handlerData: { failToLoad: true } });
    const e = failure(() => b.call("echo", 1));
    expect(e.kind).toBe("crash");
    expect(e.message).toMatch(/loading the handler failed: Error: this handler refuses to load/);
  });

  it("refuses a call made during another call", () => {
    const b = bridge();
    const params = {
      get inner() {
        return b.call("echo", "inner");
      },
    };
    const e = failure(() => b.call("echo", params));
    expect(e.message).toMatch(/a call was made while another one was in progress/);
    expect(b.call("echo", "after")).toBe("after");
  });

  it("close() runs the handler's close, ends the worker, and later calls fail", async () => {
    const b = bridge();
    b.call("echo", 1);
    await b.close();
    expect(failure(() => b.call("echo", 1)).kind).toBe("closed");
    await b.close(); // twice is fine
  });
});
