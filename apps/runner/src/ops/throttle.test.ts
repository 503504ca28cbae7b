import { describe, expect, it } from "vitest";
import { TimeAccount } from "../exec/channel";
import type { RecordSink, SinkRecord } from "../io/types";
import { JobOps, OpsSink } from "./job-ops";
import { RecordThrottle, type ThrottleClock } from "./throttle";

/** A clock whose sleeps advance it at once (or stop early when interrupted first). */
function fakeClock(): ThrottleClock & { t: number; sleeps: number[] } {
  const c = {
    t: 0,
    sleeps: [] as number[],
    now: () => c.t,
    sleep: async (ms: number) => {
      c.sleeps.push(ms);
      c.t += ms;
    },
  };
  return c;
}

function memorySink(nodeId: string): RecordSink & { written: SinkRecord[] } {
  const written: SinkRecord[] = [];
  return {
    nodeId,
    target: `memory:${nodeId}`,
    written,
    open: async () => {},
    write: async (r) => void written.push(...r),
    prepareCommit: async () => null,
    commit: async () => {},
    close: async () => {},
  };
}

const rec = (i: number): SinkRecord => ({ value: { i }, timestamp: i });

describe("RecordThrottle", () => {
  it("lets everything through at once without a cap", async () => {
    const clock = fakeClock();
    const t = new RecordThrottle(clock);
    for (let i = 0; i < 100; i++) await t.acquire(10);
    expect(clock.t).toBe(0);
    expect(t.recordsPerSecond).toBeNull();
  });

  it("paces records at the cap: 20 records at 10/s take 1.9 s of clock time", async () => {
    const clock = fakeClock();
    const t = new RecordThrottle(clock);
    t.set(10);
    for (let i = 0; i < 20; i++) await t.acquire(1);
    expect(clock.t).toBeCloseTo(1900, 6);
  });

  it("saves no credit during a quiet spell", async () => {
    const clock = fakeClock();
    const t = new RecordThrottle(clock);
    t.set(2);
    await t.acquire(1);
    clock.t += 10_000; // nothing for 10 s
    await t.acquire(1);
    await t.acquire(1);
    expect(clock.t).toBe(10_500);
  });

  it("wakes a waiting writer when the cap is lifted", async () => {
    const t = new RecordThrottle(); // real clock: the lift must cut a 100 s wait short
    t.set(0.1);
    await t.acquire(1);
    let passed = false;
    const waiting = t.acquire(1).then(() => (passed = true));
    await new Promise((r) => setImmediate(r));
    expect(passed).toBe(false);
    t.set(null);
    await waiting;
    expect(passed).toBe(true);
  });

  it("refuses a cap that is not a positive number of records per second", () => {
    const t = new RecordThrottle();
    expect(() => t.set(0)).toThrow(/at least 0.1/);
    expect(() => t.set(Number.NaN)).toThrow(/records per second/);
    expect(() => t.set(-5)).toThrow(/at least 0.1/);
  });
});

describe("OpsSink and JobOps", () => {
  it("writes every record, in order, in steps under a cap, and counts the sink busy meanwhile", async () => {
    const clock = fakeClock();
    const throttle = new RecordThrottle(clock);
    throttle.set(50); // steps of 5 records
    let now = 0;
    const time = new TimeAccount(() => now, 1000);
    const inner = memorySink("alerts");
    const sink = new OpsSink(inner, throttle, time);
    const writes: number[] = [];
    const spy: RecordSink = { ...inner, write: async (r) => void (writes.push(r.length), inner.written.push(...r)) };
    const measured = new OpsSink(spy, throttle, time);
    now = 0;
    await measured.write(Array.from({ length: 23 }, (_, i) => rec(i)));
    expect(inner.written.map((r) => r.value["i"])).toEqual(Array.from({ length: 23 }, (_, i) => i));
    expect(writes).toEqual([5, 5, 5, 5, 3]);
    expect(clock.t).toBeCloseTo(400, 6); // 4 steps of 100 ms waited before the fifth
    expect(sink.nodeId).toBe("alerts");
  });

  it("accounts a sink busy while a write is pending and idle otherwise", async () => {
    let now = 0;
    const time = new TimeAccount(() => now, 1000);
    let release!: () => void;
    const inner: RecordSink = { ...memorySink("out"), write: () => new Promise<void>((r) => (release = r)) };
    const sink = new OpsSink(inner, new RecordThrottle(), time);
    now = 100;
    const w = sink.write([rec(1)]);
    now = 850;
    release();
    await w;
    now = 1100;
    expect(time.perSecond()).toEqual({ busyTimeMsPerSecond: 682, backPressuredTimeMsPerSecond: 0, idleTimeMsPerSecond: 318 });
  });

  it("hands the writer whether the restored checkpoint was committed, and whether it writes before commit", async () => {
    // Dropping restoredCommitted made a Kafka writer take an uncommitted checkpoint as committed and
    // abort the transaction it had to finish: that epoch's output was lost on restore.
    const opened: Array<[unknown, boolean | undefined]> = [];
    const inner: RecordSink = { ...memorySink("out"), writesBeforeCommit: true, open: async (restored, restoredCommitted) => void opened.push([restored, restoredCommitted]) };
    const sink = new OpsSink(inner, new RecordThrottle(), new TimeAccount(() => 0, 1000));
    await sink.open({ transactionalId: "t.0" }, false);
    expect(opened).toEqual([[{ transactionalId: "t.0" }, false]]);
    expect(sink.writesBeforeCommit).toBe(true);
    expect(new OpsSink(memorySink("other"), new RecordThrottle(), new TimeAccount(() => 0, 1000)).writesBeforeCommit).toBe(false);
  });

  it("throttles only the job's sinks, naming the node otherwise, and keeps caps across a restart's new sinks", async () => {
    const ops = new JobOps(new Set(["alerts"]));
    expect(() => ops.setThrottle("vel", 5)).toThrow(/node "vel" is not a sink of this job \(sinks: alerts\)/);
    ops.setThrottle("alerts", 5);
    expect(ops.throttleSettings()).toEqual({ alerts: 5 });
    const first = ops.wrapSink(memorySink("alerts"));
    const second = ops.wrapSink(memorySink("alerts"));
    expect(first).not.toBe(second);
    ops.setThrottle("alerts", null);
    expect(ops.throttleSettings()).toEqual({ alerts: null });
    expect(Object.keys(ops.sinkTimes())).toEqual(["alerts"]);
  });
});
