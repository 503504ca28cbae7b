// One keyed subtask in a worker thread: a LocalJob of the keyed sub-graph restricted to this
// subtask's key-group range, fed pre-routed records and watermarks by the source task over a
// credit-based channel, writing its sink records and dead letters to the sink task's channel.
// Barriers are aligned over the input channels; on alignment the subtask forwards the barrier,
// snapshots its state and acknowledges the checkpoint to the coordinator with the bytes.
import { parentPort, workerData } from "node:worker_threads";
import { LocalJob, mergeJobSnapshots, setKeptColumnsVerification, type JobEmission, type NodeMetrics } from "@keyflow/operators";
import { CreditSender, InputGate, TimeAccount } from "./channel";
import type { FromSubtask, SubtaskInit, SubtaskReport, ToSubtask } from "./protocol";
import { ChangesAheadSchedule, MaterializePacer } from "../job/materialize";
import { openDiskStore } from "../state/disk-checkpoints";
import { codec, DEAD, IDLE, OutputBuffer, postItem, REC, SINK_JSON, toItem, WM, type Payload, type WireMessage } from "./wire";

const init = workerData as SubtaskInit;
const port = parentPort!;
const post = (m: FromSubtask, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);

async function main(): Promise<void> {
  const { doc, input, output } = init;
  if (init.verifySnapshots) setKeptColumnsVerification(true);
  const remote = {
    nodes: new Set(init.headNodes),
    output: {
      record: (to: string) => {
        throw new Error(`keyed subtask routed a record to node "${to}" of the source task`);
      },
      watermark: () => {},
      idle: () => {},
    },
  };
  // The disk backend: this subtask's own store, its key groups of the restored chains replayed into it.
  const disk = init.disk
    ? openDiskStore({ dir: init.disk.dir, label: `keyed-${init.subtask}`, restored: init.disk.restored, range: init.keyGroupRange, maxParallelism: init.disk.maxParallelism })
    : undefined;
  const opts = { processingTime: init.processingTime, keyGroupRange: init.keyGroupRange, remote, ...(disk ? { stateBackend: (id: string) => disk.backendFor(id) } : {}) };
  const job = init.restore && init.restore.length > 0 ? LocalJob.restore(doc, mergeJobSnapshots(init.restore), opts) : LocalJob.create(doc, opts);
  const local = new Set([...job.localNodes(), ...init.sinkNodes]);
  const sinkIndex = new Map(init.sinkNodes.map((id, i) => [id, i]));
  const wire = codec(init.codec);
  const time = new TimeAccount();
  const gate = new InputGate<Payload>(1);
  const out = new CreditSender<Payload>((item) => postItem(output, item), init.buffersPerChannel);
  const buffer = new OutputBuffer(init.bufferRecords);
  let recordsIn = 0;
  let recordsOut = 0;
  let pendingNow: number | undefined;
  let wake: (() => void) | undefined;
  const wakeUp = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };

  input.on("message", (m: WireMessage) => {
    gate.push(0, toItem(m));
    wakeUp();
  });
  output.on("message", (m: { c: number }) => out.grant(m.c));
  port.on("message", (m: ToSubtask) => {
    if (m.type === "time") pendingNow = m.now;
    else if (m.type === "abort") gate.abort(m.id);
    else if (m.type === "state") {
      // Between two buffers (this handler never runs inside one): the snapshot is consistent.
      post({ type: "state", id: m.id, view: job.queryState(m.nodeId, m.key) ?? null });
      return;
    }
    wakeUp();
  });

  const report = (): SubtaskReport => {
    const all = job.metrics();
    const nodes: Record<string, NodeMetrics> = {};
    for (const id of local) if (all[id]) nodes[id] = all[id];
    return {
      nodes,
      times: time.perSecond(),
      totals: time.cumulative(),
      queuedRecords: out.inFlightRecords,
      maxQueuedRecords: out.maxInFlightRecords,
      inputQueuedRecords: gate.queuedRecords,
      recordsIn,
      recordsOut,
    };
  };
  const metricsTimer = setInterval(() => post({ type: "metrics", report: report() }), init.metricsIntervalMs);

  const collect = (emissions: JobEmission[]) => {
    for (const e of emissions) {
      if (e.kind === "sink") buffer.record(SINK_JSON, sinkIndex.get(e.nodeId) ?? -1, JSON.stringify(e.value), e.timestamp, e.key ?? null);
      else buffer.record(DEAD, e);
    }
  };
  const flush = async () => {
    for (const b of buffer.take()) {
      recordsOut += b.records;
      await out.send(wire.encode(b.elements), b.records, (waiting) => time.switchTo(waiting ? "backPressured" : "busy"));
    }
  };

  const routes = init.routes;
  post({ type: "ready" });
  time.switchTo("idle");
  const pacer = new MaterializePacer(init.checkpointIntervalMs);
  const ahead = new ChangesAheadSchedule(init.checkpointIntervalMs);
  let lastAligned = 0;
  for (;;) {
    if (ahead.dueInMs() === 0) {
      // Between two buffers: the changes are those of a consistent state, and the barrier's own
      // snapshot holds only what changes after them.
      time.switchTo("busy");
      ahead.taken();
      const state = job.snapshot("changes");
      post({ type: "changes", after: lastAligned, state }, [state.buffer as ArrayBuffer]);
    }
    const next = gate.poll();
    if (next === undefined) {
      if (pendingNow !== undefined) {
        time.switchTo("busy");
        job.advanceProcessingTime(pendingNow);
        pendingNow = undefined;
        collect(job.drain());
        await flush();
        continue;
      }
      const dueIn = Math.min(pacer.dueInMs(), ahead.dueInMs());
      if (dueIn === 0) {
        if (ahead.dueInMs() === 0) continue; // taken at the top of the loop
        // Nothing to do: pack the changed state now rather than at the next barrier (../job/materialize.ts).
        time.switchTo("busy");
        // A slice at a time: input posted meanwhile reaches the gate only through the event loop.
        if (!pacer.materializeSlice(job)) await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      time.switchTo("idle");
      let due: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (dueIn !== Number.POSITIVE_INFINITY) due = setTimeout(wakeUp, dueIn);
      });
      // Woken by input first: a timer left behind would wake a later, unrelated wait.
      clearTimeout(due);
      continue;
    }
    time.switchTo("busy");
    if (next.kind === "data") {
      const els = wire.decode(next.payload);
      for (let i = 0; i < els.length; ) {
        const kind = els[i] as number;
        const r = routes[els[i + 1] as number]!;
        if (kind === REC) {
          recordsIn++;
          job.pushExchange(r.to, r.port, r.channel, els[i + 2] as never, els[i + 3] as number, undefined);
          i += 4;
        } else if (kind === WM) {
          job.pushWatermark(r.to, r.channel, els[i + 2] as number);
          i += 3;
        } else if (kind === IDLE) {
          job.markInputIdle(r.to, r.channel, els[i + 2] === 1);
          i += 3;
        } else throw new Error(`subtask ${init.subtask}: unknown element kind ${kind}`);
      }
      collect(job.drain());
      await flush();
      input.postMessage({ c: 1 });
      pacer.inputProcessed();
      ahead.inputProcessed();
    } else if (next.kind === "aligned") {
      collect(job.drain());
      await flush();
      // Forwarded first (as Flink's tasks do): the sink task aligns it while this subtask snapshots,
      // and nothing runs here between the two, so the snapshot is still the state at the barrier.
      out.event({ kind: "barrier", id: next.id });
      const t0 = performance.now();
      // Heap state kept in a checkpoint folder: the barrier says whether to write it whole or only its changes.
      const state = disk ? disk.referenceSnapshots(() => job.snapshot()) : job.snapshot(next.options?.changelog);
      const chain = disk && init.disk?.sharedDir !== undefined ? disk.writeCheckpoint(next.id, init.disk.sharedDir, "../shared", init.disk.suffix) : undefined;
      const syncMs = performance.now() - t0;
      pacer.packed();
      lastAligned = next.id;
      // The disk backend's checkpoints are incremental on their own.
      ahead.barrier(!disk && next.options?.changelog !== undefined, t0);
      post({ type: "ack", id: next.id, state, alignmentMs: next.alignmentMs, syncMs, ...(chain ? { disk: chain } : {}) }, [state.buffer as ArrayBuffer]);
    } else {
      collect(job.drain());
      await flush();
      out.event({ kind: "end" });
      break;
    }
  }
  clearInterval(metricsTimer);
  time.switchTo("idle");
  post({ type: "finished", report: report() });
  disk?.close();
  input.close();
  // The output port stays open until the coordinator terminates the worker: credits may still arrive.
}

main().catch((err: unknown) => {
  post({ type: "error", message: `keyed subtask ${init.subtask}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}` });
});
