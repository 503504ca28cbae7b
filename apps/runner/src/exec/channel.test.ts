// The channel logic of parallel jobs: barrier alignment in the input gate, credit-based sending,
// and busy / backpressured / idle accounting. No threads, no timers: a fake clock where time matters.
import { describe, expect, it } from "vitest";
import { CreditSender, InputGate, TimeAccount, type ChannelItem, type GateNext } from "./channel";

const data = (payload: string, records = 1): ChannelItem<string> => ({ kind: "data", payload, records });
const barrier = (id: number): ChannelItem<string> => ({ kind: "barrier", id });
const END: ChannelItem<string> = { kind: "end" };

function drain(gate: InputGate<string>): Array<string> {
  const out: string[] = [];
  for (let n = gate.poll(); n !== undefined; n = gate.poll()) out.push(describe_(n));
  return out;
}
function describe_(n: GateNext<string>): string {
  return n.kind === "data" ? `${n.channel}:${n.payload}` : n.kind === "aligned" ? `aligned ${n.id}` : "end";
}

describe("InputGate", () => {
  it("yields buffers in arrival order across channels", () => {
    const g = new InputGate<string>(2);
    g.push(1, data("a"));
    g.push(0, data("b"));
    g.push(1, data("c"));
    expect(drain(g)).toEqual(["1:a", "0:b", "1:c"]);
  });

  it("with one channel, a barrier aligns at once", () => {
    const g = new InputGate<string>(1);
    g.push(0, data("a"));
    g.push(0, barrier(1));
    g.push(0, data("b"));
    expect(drain(g)).toEqual(["0:a", "aligned 1", "0:b"]);
  });

  it("blocks a channel that delivered the barrier until every channel has, then aligns once", () => {
    let now = 0;
    const g = new InputGate<string>(3, () => now);
    g.push(0, data("a1"));
    g.push(0, barrier(7));
    g.push(0, data("a2")); // after the barrier: must wait
    g.push(1, data("b1"));
    expect(drain(g)).toEqual(["0:a1", "1:b1"]);
    expect(g.pendingBarrier).toBe(7);
    now = 5;
    g.push(1, barrier(7));
    g.push(1, data("b2"));
    g.push(2, data("c1"));
    expect(drain(g)).toEqual(["2:c1"]); // channel 2 still owes its barrier; 0 and 1 stay blocked
    now = 12;
    g.push(2, barrier(7));
    const next = g.poll();
    expect(next).toEqual({ kind: "aligned", id: 7, alignmentMs: 12 });
    expect(drain(g)).toEqual(["0:a2", "1:b2"]);
    expect(g.pendingBarrier).toBeUndefined();
  });

  it("hands the aligning task its barrier's options (the snapshot a changelog checkpoint takes), and a newer barrier's over an older one's", () => {
    const g = new InputGate<string>(2);
    g.push(0, { kind: "barrier", id: 3, options: { changelog: "changes" } });
    g.push(1, { kind: "barrier", id: 3, options: { changelog: "changes" } });
    expect(g.poll()).toMatchObject({ kind: "aligned", id: 3, options: { changelog: "changes" } });
    // Barrier 4 superseded by 5 before it aligned: the task takes 5's snapshot, as 5 asks.
    g.push(0, { kind: "barrier", id: 4, options: { changelog: "changes" } });
    g.push(0, { kind: "barrier", id: 5, options: { changelog: "whole" } });
    g.push(1, { kind: "barrier", id: 5, options: { changelog: "whole" } });
    expect(g.poll()).toMatchObject({ kind: "aligned", id: 5, options: { changelog: "whole" } });
    // A barrier without options aligns without them.
    g.push(0, barrier(6));
    g.push(1, barrier(6));
    expect(g.poll()).toEqual({ kind: "aligned", id: 6, alignmentMs: expect.any(Number) as number });
  });

  it("counts ended channels as aligned, and ends when every channel ended", () => {
    const g = new InputGate<string>(2);
    g.push(0, data("a"));
    g.push(0, END);
    g.push(1, barrier(1));
    g.push(1, data("b"));
    g.push(1, END);
    expect(drain(g)).toEqual(["0:a", "aligned 1", "1:b", "end"]);
    expect(g.poll()).toBeUndefined(); // end is yielded once
  });

  it("a channel ending while others are blocked completes the alignment", () => {
    const g = new InputGate<string>(2);
    g.push(0, barrier(3));
    g.push(0, data("after"));
    expect(drain(g)).toEqual([]);
    g.push(1, data("b"));
    g.push(1, END);
    expect(drain(g)).toEqual(["1:b", "aligned 3", "0:after"]);
  });

  it("abort releases the blocked channels and drops that checkpoint's late barriers", () => {
    const g = new InputGate<string>(2);
    g.push(0, barrier(4));
    g.push(0, data("a"));
    expect(drain(g)).toEqual([]);
    g.abort(4);
    expect(drain(g)).toEqual(["0:a"]);
    g.push(1, barrier(4)); // late: ignored
    g.push(1, data("b"));
    expect(drain(g)).toEqual(["1:b"]);
    g.push(0, barrier(5));
    g.push(1, barrier(5));
    expect(drain(g)).toEqual(["aligned 5"]);
  });

  it("a newer barrier supersedes the one being aligned", () => {
    const g = new InputGate<string>(2);
    g.push(0, barrier(1));
    g.push(0, barrier(2));
    g.push(0, data("a"));
    expect(drain(g)).toEqual([]); // channel 0 blocked behind barrier 1
    expect(g.pendingBarrier).toBe(1);
    // Channel 1 skipped checkpoint 1 (aborted upstream): its barrier 2 cancels the alignment of 1,
    // channel 0 flows again and reads its barrier 2: checkpoint 2 aligns; 1 never does.
    g.push(1, barrier(2));
    g.push(1, barrier(1)); // stale
    expect(drain(g)).toEqual(["aligned 2", "0:a"]);
  });

  it("counts queued records", () => {
    const g = new InputGate<string>(2);
    g.push(0, data("a", 10));
    g.push(1, data("b", 5));
    g.push(1, barrier(1));
    expect(g.queuedRecords).toBe(15);
    g.poll();
    expect(g.queuedRecords).toBe(5);
  });
});

describe("CreditSender", () => {
  it("sends only with credit, waits without, resumes when the receiver grants", async () => {
    const sent: Array<ChannelItem<string>> = [];
    const s = new CreditSender<string>((i) => sent.push(i), 2);
    await s.send("a", 10);
    await s.send("b", 10);
    expect(s.availableCredits).toBe(0);
    expect(s.inFlightRecords).toBe(20);
    const waits: boolean[] = [];
    let third = false;
    const p = s.send("c", 10, (w) => waits.push(w)).then(() => (third = true));
    await Promise.resolve();
    expect(third).toBe(false);
    expect(sent.map((x) => (x.kind === "data" ? x.payload : x.kind))).toEqual(["a", "b"]);
    s.event({ kind: "barrier", id: 1 }); // events need no credit
    s.grant(1); // "a" consumed
    await p;
    expect(third).toBe(true);
    expect(waits).toEqual([true, false]);
    expect(sent.map((x) => (x.kind === "data" ? x.payload : x.kind))).toEqual(["a", "b", "barrier", "c"]);
    expect(s.inFlightRecords).toBe(20);
    expect(s.maxInFlightRecords).toBe(20);
  });

  it("close releases a waiting send without sending", async () => {
    const sent: Array<ChannelItem<string>> = [];
    const s = new CreditSender<string>((i) => sent.push(i), 1);
    await s.send("a", 1);
    const p = s.send("b", 1);
    s.close();
    await p;
    expect(sent).toHaveLength(1);
  });
});

describe("TimeAccount", () => {
  it("reports ms per second in each state over the last window", () => {
    let now = 0;
    const t = new TimeAccount(() => now, 1000);
    t.switchTo("busy");
    now = 300;
    t.switchTo("backPressured");
    now = 500;
    t.switchTo("idle");
    now = 1000;
    expect(t.perSecond()).toEqual({ busyTimeMsPerSecond: 300, backPressuredTimeMsPerSecond: 200, idleTimeMsPerSecond: 500 });
    now = 2000; // idle the whole next second
    expect(t.perSecond()).toEqual({ busyTimeMsPerSecond: 0, backPressuredTimeMsPerSecond: 0, idleTimeMsPerSecond: 1000 });
    expect(t.cumulative()).toEqual({ busy: 300, backPressured: 200, idle: 1500 });
  });
});
