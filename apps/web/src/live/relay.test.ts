// The web server's side of the live figures: the runner's SSE stream read and parsed, then turned
// into rates from successive counters.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSse, RunnerJobNotFoundError, streamJobMetrics } from "../server/runner-client";
import { runnerSnapshotSchema, toLiveMetrics, type RunnerSnapshot } from "./metrics";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(enc.encode(c));
      controller.close();
    },
  });
}

describe("parseSse", () => {
  it("splits events across chunk boundaries and skips comments", async () => {
    const events = [];
    for await (const e of parseSse(streamOf([": ping\n\nevent: metr", "ics\ndata: {\"a\":1}\n", "\nevent: metrics\r\ndata: {\"a\":2}\r\n\r\ndata: x\n\n"]))) events.push(e);
    expect(events).toEqual([
      { event: "metrics", data: '{"a":1}' },
      { event: "metrics", data: '{"a":2}' },
      { event: "message", data: "x" },
    ]);
  });
});

describe("streamJobMetrics against a runner-like server", () => {
  let server: Server;
  let url = "";
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url !== "/jobs/j1/metrics/stream") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: `no job` }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const base = Date.parse("2026-06-01T09:00:00Z");
      for (let i = 0; i < 3; i++) {
        const snap = { jobId: "j1", pipeline: "p", status: "running", time: new Date(base + i * 1000).toISOString(), deadLetters: 0, lastCheckpointId: null, nodes: { src: { type: "source.demo", recordsIn: 0, recordsOut: i * 200, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: null } }, sources: {} };
        res.write(`event: metrics\ndata: ${JSON.stringify(snap)}\n\n`);
      }
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("relays snapshots whose rates come from successive counters", async () => {
    const rates: number[] = [];
    let previous: RunnerSnapshot | undefined;
    for await (const raw of streamJobMetrics(url, "j1")) {
      const snap = runnerSnapshotSchema.parse(raw);
      rates.push(toLiveMetrics("dep", snap, previous).nodes.src?.recordsOutPerSecond ?? -1);
      previous = snap;
    }
    expect(rates).toEqual([0, 200, 200]);
  });

  it("tells a job the runner does not know from a runner that is down", async () => {
    await expect(async () => {
      for await (const _ of streamJobMetrics(url, "nope")) void _;
    }).rejects.toBeInstanceOf(RunnerJobNotFoundError);
  });
});
