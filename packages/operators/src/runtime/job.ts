// LocalJob: a validated pipeline executed in one thread, all key groups in one process. The runner
// and `keyflow run` own the I/O: they push raw source records in, advance the injected clock, and
// drain sink records and dead letters out. Everything in between is deterministic.
import type { JsonObject, JsonValue, Key, StreamRecord } from "../core/api";
import { MAX_WATERMARK, MIN_WATERMARK } from "../core/api";
import { OperatorHost } from "../core/host";
import { PartitionWatermarks } from "../core/watermarks";
import type { KeyGroupRange } from "../core/keys";
import type { OperatorServices, OperatorSpec } from "../core/spec";
import type { ChangelogSnapshot, KeyedStateBackend, MaterializeBudget, SnapshotHold } from "../core/state";
import { decodeSnapshot, encodeSnapshotPieces, joinPieces, PROTO_FIELD_REFUSAL, type PieceRef, type SnapshotPieces } from "../core/snapshot-codec";
import { getOperatorSpec } from "../catalog";
import type { PipelineDocument } from "../pipeline/document";
import { validatePipeline } from "../pipeline/validate";
import { DEFAULT_MAX_OUT_OF_ORDERNESS_MS } from "../operators/event-time";
import { readField } from "../operators/shared/fields";
import { compileGraph, PipelineInvalidError, type GraphNode, type JobGraph, type PipelineIssue } from "./graph";
import { queryKeyState, type KeyStateView } from "./queryable";
import { eventTimeOf } from "./timestamps";

export { PipelineInvalidError, type PipelineIssue };

/** Where a source record came from, as the runner knows it; echoed in dead letters. */
export interface SourceOrigin {
  partition: number;
  offset?: string;
  topic?: string;
  path?: string;
  line?: number;
}

export type JobEmission =
  | { kind: "sink"; nodeId: string; value: JsonObject; timestamp: number; key?: string }
  | {
      kind: "deadLetter";
      nodeId: string;
      port?: string;
      reason: string;
      raw?: string;
      value?: JsonValue;
      origin?: SourceOrigin & { sourceNodeId: string };
    };

export interface LocalJobOptions {
  /** The injected processing-time clock's start; default -infinity. */
  processingTime?: number;
  /** Restricts keyed processing to these key groups (inclusive), for one of the runner's subtasks. */
  keyGroupRange?: KeyGroupRange;
  /**
   * Nodes another task of the runner runs (a parallel job's task boundary): they get no host here,
   * and the records, watermarks and idleness this job would hand them go to `output` instead.
   * Records for them arrive through pushExchange / pushWatermark / markInputIdle on their task.
   */
  remote?: { nodes: ReadonlySet<string>; output: ExchangeOutput };
  /**
   * What the runner injects into every operator's init: process.custom's CustomFunctionFactory
   * (its sandbox). The engine never creates these; without them process.custom refuses to run.
   */
  operatorServices?: OperatorServices;
  /** The keyed state backend of each operator node (the runner's on-disk one); default: a heap backend per node. */
  stateBackend?: (nodeId: string) => KeyedStateBackend;
  /**
   * Hand the keyed records an operator with a batch path receives between two other events in one
   * OperatorHost.processBatch call (default true); false delivers every record at once, one by one.
   * Output, state and snapshots are the same either way (see LocalJob.pending).
   */
  batches?: boolean;
}

/** Where a task's records and watermarks for a node of another task go (see LocalJobOptions.remote). */
export interface ExchangeOutput {
  record(to: string, port: string, channel: number, value: JsonObject, timestamp: number, key: Key | undefined): void;
  watermark(to: string, channel: number, watermark: number): void;
  idle(to: string, channel: number, idle: boolean): void;
}

export interface NodeMetrics {
  recordsIn: number;
  recordsOut: number;
  late: number;
  deadLetters: number;
  keys: number;
  timers: number;
  stateBytes: number;
  watermark: number;
}

export interface JobEndpoint {
  nodeId: string;
  type: string;
  /** Params parsed by the spec (defaults filled). */
  params: unknown;
}

const JOB_SNAPSHOT_FORMAT = "keyflow.job-snapshot/v1";

/** A source node: event-time extraction, and the watermark of its partitions. */
class SourceRuntime {
  readonly watermarks: PartitionWatermarks;
  /** Whether downstream was told this source is idle. */
  idle = false;
  recordsIn = 0;
  recordsOut = 0;
  deadLetters = 0;
  readonly timestampField: string;
  readonly idleTimeoutMs: number | undefined;

  constructor(readonly node: GraphNode) {
    const p = node.params as { timestampField?: unknown; maxOutOfOrdernessMs?: unknown; idleTimeoutMs?: unknown };
    if (typeof p.timestampField !== "string") throw new PipelineInvalidError([{ severity: "error", nodeId: node.id, param: "timestampField", message: "a source needs a timestampField" }]);
    this.timestampField = p.timestampField;
    this.watermarks = new PartitionWatermarks(typeof p.maxOutOfOrdernessMs === "number" ? p.maxOutOfOrdernessMs : DEFAULT_MAX_OUT_OF_ORDERNESS_MS);
    this.idleTimeoutMs = typeof p.idleTimeoutMs === "number" ? p.idleTimeoutMs : undefined;
  }
}

export class LocalJob {
  readonly sources: JobEndpoint[];
  readonly sinks: JobEndpoint[];

  private readonly graph: JobGraph;
  private readonly hosts = new Map<string, OperatorHost>();
  private readonly sourceRuntimes = new Map<string, SourceRuntime>();
  /** Distinct (downstream node, channel) pairs per node: where its watermark goes. */
  private readonly downstream = new Map<string, Array<{ to: string; channel: number }>>();
  private readonly idleNodes = new Set<string>();
  private readonly sinkCounts = new Map<string, number>();
  private readonly deadLetterCounts = new Map<string, number>();
  private emissions: JobEmission[] = [];
  private processingTime: number;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private readonly remote: LocalJobOptions["remote"];
  private readonly batches: boolean;
  /**
   * Keyed records (or any, for a node that keys its input itself) routed to one operator with a
   * batch path (OperatorHost.takesBatches), on `in` through channel 0, not yet delivered. They are
   * delivered in one processBatch call (the overlapping lookups of Operator.processBatch) before
   * anything that could see the difference: a watermark, idleness or processing time anywhere; a
   * record for that operator on another input or for a node downstream of it; anything added to the
   * emissions (sink records, dead letters, in order) or sent to another task; and every public call
   * that reads or changes the job otherwise (drain, snapshot, metrics...). Nodes upstream of it or
   * on other branches may run meanwhile: nothing they do reads its state. So the output, its
   * order, the watermarks, the late/dead-letter routing and every snapshot are those of
   * record-by-record delivery; a source poll's records between two watermark advances become one
   * batch. Held values are not copied:
   * like every consumer of emitted records, this relies on no operator changing a value after
   * emitting it.
   */
  private pending: { host: OperatorHost; records: StreamRecord[]; downstream: ReadonlySet<string> } | undefined = undefined;
  /** Per batch-taking node: its record buffer (reused) and the nodes reachable from it. */
  private readonly batchBuffers = new Map<OperatorHost, { records: StreamRecord[]; downstream: ReadonlySet<string> }>();

  private constructor(
    readonly document: PipelineDocument,
    opts: LocalJobOptions,
    restored?: JobSnapshot,
  ) {
    this.graph = compileGraph(document, getOperatorSpec);
    this.remote = opts.remote;
    this.batches = opts.batches ?? true;
    this.processingTime = opts.processingTime ?? MIN_WATERMARK;
    if (restored) this.processingTime = Math.max(this.processingTime, restored.processingTime);
    const maxParallelism = document.settings.maxParallelism;
    for (const id of this.graph.order) {
      const node = this.graph.nodes.get(id) as GraphNode;
      const seen = new Set<string>();
      const down: Array<{ to: string; channel: number }> = [];
      for (const routes of node.routes.values()) {
        for (const r of routes) {
          if (seen.has(r.to)) continue;
          seen.add(r.to);
          down.push({ to: r.to, channel: r.channel });
        }
      }
      this.downstream.set(id, down);
      if (this.remote?.nodes.has(id)) continue;
      if (node.role === "source") this.sourceRuntimes.set(id, new SourceRuntime(node));
      else if (node.role === "sink") this.sinkCounts.set(id, 0);
      else {
        const hostSnapshot = restored?.nodes[id];
        const host = new OperatorHost({
          nodeId: id,
          spec: node.spec,
          params: node.params,
          connectedOutputs: node.connectedOutputs,
          inputChannels: node.upstream.length,
          maxParallelism,
          processingTime: this.processingTime,
          emit: (port, value, timestamp, key) => this.route(node, port, value, timestamp, key),
          onWatermark: (wm) => this.forwardWatermark(id, wm),
          ...(opts.keyGroupRange ? { keyGroupRange: opts.keyGroupRange } : {}),
          ...(hostSnapshot ? { restoreFrom: hostSnapshot } : {}),
          services: { ...opts.operatorServices, maxStateBytesPerKey: document.settings.maxStateBytesPerKey },
          ...(opts.stateBackend ? { backend: opts.stateBackend(id) } : {}),
        });
        this.hosts.set(id, host);
      }
      this.deadLetterCounts.set(id, 0);
    }
    if (restored) this.restoreRuntime(restored);
    if (this.batches) {
      for (const [id, host] of this.hosts) if (host.takesBatches) this.batchBuffers.set(host, { records: [], downstream: this.reachableFrom(id) });
    }
    const endpoint = (n: GraphNode): JobEndpoint => ({ nodeId: n.id, type: n.type, params: n.params });
    const all = this.graph.order.map((id) => this.graph.nodes.get(id) as GraphNode);
    this.sources = all.filter((n) => n.role === "source").map(endpoint);
    this.sinks = all.filter((n) => n.role === "sink").map(endpoint);
  }

  /** Validates and compiles `doc`; throws PipelineInvalidError naming every problem when it cannot run. */
  static create(doc: unknown, opts: LocalJobOptions = {}): LocalJob {
    return new LocalJob(LocalJob.validated(doc), opts);
  }

  /** A job continuing from `bytes` (taken by snapshot() on a job of the same pipeline). */
  static restore(doc: unknown, bytes: Uint8Array, opts: LocalJobOptions = {}): LocalJob {
    const snap = decodeSnapshot(bytes) as JobSnapshot;
    if (snap === null || typeof snap !== "object" || snap.format !== JOB_SNAPSHOT_FORMAT) {
      throw new Error(`not a job snapshot (${JOB_SNAPSHOT_FORMAT})`);
    }
    return new LocalJob(LocalJob.validated(doc), opts, snap);
  }

  private static validated(doc: unknown): PipelineDocument {
    // The engine opens no file and writes no output itself: where files and outputs may be is the
    // runner's to check (its validator call and its own confinement), so a rule job's routed sinks pass.
    const result = validatePipeline(doc, { anyFilePaths: true, sharedOutputs: true });
    if (!result.ok || !result.document) throw new PipelineInvalidError(result.issues);
    return result.document;
  }

  // ---- input ---------------------------------------------------------------------------------

  /** One raw source record (a Kafka message value, a file line). Malformed input becomes a dead letter; never throws for it. */
  pushRaw(sourceNodeId: string, raw: string | Uint8Array, origin: SourceOrigin): void {
    const src = this.source(sourceNodeId);
    let text: string;
    if (typeof raw === "string") text = raw;
    else {
      try {
        text = this.decoder.decode(raw);
      } catch {
        src.recordsIn++;
        this.sourceDeadLetter(src, origin, "is not valid UTF-8", new TextDecoder().decode(raw));
        return;
      }
    }
    let value: JsonValue;
    try {
      value = JSON.parse(text) as JsonValue;
    } catch (e) {
      src.recordsIn++;
      this.sourceDeadLetter(src, origin, `is not valid JSON (${(e as Error).message})`, text);
      return;
    }
    // A key written with escapes ("\u005f_proto__") parses to the same field: look whenever the text
    // has an escape at all (a walk of the parsed record, only for those).
    const proto = text.includes("__proto__") || text.includes("\\u") ? protoFieldPath(value, "") : undefined;
    if (proto !== undefined) {
      // Refused whole, with its bytes, rather than altered (see PROTO_FIELD_REFUSAL).
      src.recordsIn++;
      this.sourceDeadLetter(src, origin, `has a field named "__proto__" (${proto}), ${PROTO_FIELD_REFUSAL}`, text);
      return;
    }
    this.pushParsed(src, value, origin, text);
  }

  /** One already-parsed source record. */
  pushValue(sourceNodeId: string, value: JsonValue, origin: SourceOrigin): void {
    this.pushParsed(this.source(sourceNodeId), value, origin, undefined);
  }

  private pushParsed(src: SourceRuntime, value: JsonValue, origin: SourceOrigin, raw: string | undefined): void {
    src.recordsIn++;
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.sourceDeadLetter(src, origin, `is ${value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`}, not a JSON object`, raw, value);
      return;
    }
    const ts = eventTimeOf(readField(value, src.timestampField));
    if (typeof ts === "string") {
      this.sourceDeadLetter(src, origin, `has no event time: timestamp field "${src.timestampField}" ${ts}`, raw, value);
      return;
    }
    if (src.watermarks.isEnded) {
      this.sourceDeadLetter(src, origin, "arrived after the end of its input", raw, value);
      return;
    }
    if (src.idle) this.setSourceIdle(src, false);
    // The record goes out before it moves the watermark: it is late iff ts <= the watermark at its arrival.
    src.recordsOut++;
    this.route(src.node, "out", value, ts, undefined);
    const wm = src.watermarks.onRecord(origin.partition, ts, this.processingTime);
    if (wm !== undefined) this.forwardWatermark(src.node.id, wm);
  }

  /** Each partition's watermark and idleness at a source node (empty for a node that is not a source). */
  sourcePartitionWatermarks(sourceNodeId: string): Array<{ partition: number; watermark: number | null; idle: boolean }> {
    return this.sourceRuntimes.get(sourceNodeId)?.watermarks.partitionWatermarks() ?? [];
  }

  /** The runner saw no record on this partition for idleTimeoutMs: it stops holding the watermark back. */
  markPartitionIdle(sourceNodeId: string, partition: number): void {
    this.flush();
    const src = this.source(sourceNodeId);
    const wm = src.watermarks.markIdle(partition, this.processingTime);
    if (wm !== undefined) this.forwardWatermark(src.node.id, wm);
    if (src.watermarks.idle && !src.idle) this.setSourceIdle(src, true);
  }

  /** The source's input is exhausted: its watermark becomes +infinity, firing every window and timer downstream. */
  endOfInput(sourceNodeId: string): void {
    this.flush();
    const src = this.source(sourceNodeId);
    if (src.watermarks.isEnded) return;
    src.watermarks.end();
    src.idle = false;
    this.forwardWatermark(src.node.id, MAX_WATERMARK);
  }

  /**
   * Advances the injected processing-time clock: fires the operators' processing-time timers, and
   * marks idle the partitions of sources with `idleTimeoutMs` that had no record for that long
   * (the runner may also call markPartitionIdle itself).
   */
  advanceProcessingTime(now: number): void {
    this.flush();
    if (now <= this.processingTime) return;
    this.processingTime = now;
    for (const src of this.sourceRuntimes.values()) {
      if (src.idleTimeoutMs === undefined || src.watermarks.isEnded) continue;
      for (const partition of src.watermarks.silentPartitions(now, src.idleTimeoutMs)) this.markPartitionIdle(src.node.id, partition);
    }
    for (const id of this.graph.order) this.hosts.get(id)?.setProcessingTime(now);
  }

  /** Everything emitted since the last drain, in order. */
  drain(): JobEmission[] {
    this.flush();
    const out = this.emissions;
    this.emissions = [];
    return out;
  }

  // ---- input from another task (parallel jobs) ---------------------------------------------------

  /** A record another task routed to `to` (a node this job runs) on input `port` through watermark channel `channel`. */
  pushExchange(to: string, port: string, channel: number, value: JsonObject, timestamp: number, key: Key | undefined): void {
    this.deliver(to, this.localHost(to), port, channel, value, timestamp, key);
  }

  /** A watermark another task sent to `to` through channel `channel`. */
  pushWatermark(to: string, channel: number, watermark: number): void {
    this.flush();
    const host = this.localHost(to);
    const wasIdle = this.idleNodes.has(to);
    host.processWatermark(watermark, channel);
    if (wasIdle) this.updateIdle(to);
  }

  /** Another task's node upstream of `to` became idle (or active again). */
  markInputIdle(to: string, channel: number, idle: boolean): void {
    this.flush();
    this.localHost(to).markChannelIdle(channel, idle);
    this.updateIdle(to);
  }

  /** The nodes this job runs (every node unless LocalJobOptions.remote names some). */
  localNodes(): string[] {
    return this.graph.order.filter((id) => !this.remote?.nodes.has(id));
  }

  private localHost(id: string): OperatorHost {
    const h = this.hosts.get(id);
    if (!h) throw new Error(`node "${id}" is not an operator this task runs`);
    return h;
  }

  // ---- routing ---------------------------------------------------------------------------------

  private route(node: GraphNode, port: string, value: JsonObject, timestamp: number, key: Key | undefined): void {
    const routes = node.routes.get(port);
    if (routes === undefined) {
      if (port === "late" || port === "errors") this.operatorDeadLetter(node, port, value, timestamp);
      return;
    }
    for (const r of routes) {
      const host = this.hosts.get(r.to);
      if (host === undefined && this.remote?.nodes.has(r.to)) {
        this.flush();
        this.remote.output.record(r.to, r.port, r.channel, value, timestamp, key);
        continue;
      }
      if (host !== undefined) {
        this.deliver(r.to, host, r.port, r.channel, value, timestamp, key);
        continue;
      }
      // A sink: the runner writes these.
      this.flush();
      this.sinkCounts.set(r.to, (this.sinkCounts.get(r.to) ?? 0) + 1);
      this.emissions.push(key === undefined ? { kind: "sink", nodeId: r.to, value, timestamp } : { kind: "sink", nodeId: r.to, value, timestamp, key });
    }
  }

  /** A `late` or `errors` record on a port without an edge: never silently dropped. */
  private operatorDeadLetter(node: GraphNode, port: string, value: JsonObject, timestamp: number): void {
    this.flush();
    this.deadLetterCounts.set(node.id, (this.deadLetterCounts.get(node.id) ?? 0) + 1);
    if (port === "errors" && typeof value.error === "string" && value.record !== null && typeof value.record === "object" && !Array.isArray(value.record)) {
      this.emissions.push({ kind: "deadLetter", nodeId: node.id, port, reason: value.error, value: value.record });
      return;
    }
    const wm = this.hosts.get(node.id)?.watermark ?? MIN_WATERMARK;
    const reason =
      port === "late"
        ? `node "${node.id}": late record (timestamp ${timestamp} <= watermark ${wm}); connect the "late" port to handle late records`
        : `node "${node.id}": record on the unconnected "${port}" port`;
    this.emissions.push({ kind: "deadLetter", nodeId: node.id, port, reason, value });
  }

  private sourceDeadLetter(src: SourceRuntime, origin: SourceOrigin, what: string, raw: string | undefined, value?: JsonValue): void {
    this.flush();
    src.deadLetters++;
    const where = [`partition ${origin.partition}`, origin.topic !== undefined ? `topic ${origin.topic}` : "", origin.offset !== undefined ? `offset ${origin.offset}` : "", origin.path !== undefined ? `file ${origin.path}` : "", origin.line !== undefined ? `line ${origin.line}` : ""]
      .filter(Boolean)
      .join(", ");
    const e: JobEmission = { kind: "deadLetter", nodeId: src.node.id, reason: `source "${src.node.id}" (${where}): the record ${what}`, origin: { ...origin, sourceNodeId: src.node.id } };
    if (raw !== undefined) e.raw = raw;
    if (value !== undefined) e.value = value;
    this.emissions.push(e);
  }

  /** A record for operator node `id` on input `port` through `channel`: held for a batch (see pending) or processed now. */
  private deliver(id: string, host: OperatorHost, port: string, channel: number, value: JsonObject, timestamp: number, key: Key | undefined): void {
    const pending = this.pending;
    if ((key !== undefined || host.selectsKeys) && port === "in" && channel === 0) {
      if (pending !== undefined && pending.host === host) {
        pending.records.push({ value, timestamp, key });
        return;
      }
      const buffer = this.batchBuffers.get(host);
      if (buffer !== undefined) {
        if (pending !== undefined) this.flush();
        buffer.records.push({ value, timestamp, key });
        this.pending = { host, records: buffer.records, downstream: buffer.downstream };
        return;
      }
    }
    // The held records go first if this record's processing could see them (or their output).
    if (pending !== undefined && pending.downstream.has(id)) this.flush();
    host.processElement(key === undefined ? { value, timestamp } : { value, timestamp, key }, port, channel);
  }

  /** Delivers the held records (see pending), and those their processing held for a node further down. */
  private flush(): void {
    for (let pending = this.pending; pending !== undefined; pending = this.pending) {
      this.pending = undefined;
      const records = pending.records;
      try {
        pending.host.processBatch(records, 0, records.length);
      } finally {
        records.length = 0;
      }
    }
  }

  /** The nodes reachable from `id` along edges, `id` included. */
  private reachableFrom(id: string): Set<string> {
    const seen = new Set<string>([id]);
    const stack = [id];
    while (stack.length > 0) {
      for (const d of this.downstream.get(stack.pop() as string) ?? []) {
        if (seen.has(d.to)) continue;
        seen.add(d.to);
        stack.push(d.to);
      }
    }
    return seen;
  }

  // ---- watermarks and idleness -------------------------------------------------------------------

  private forwardWatermark(fromId: string, wm: number): void {
    this.flush();
    for (const d of this.downstream.get(fromId) ?? []) {
      const host = this.hosts.get(d.to);
      if (host === undefined) {
        if (this.remote?.nodes.has(d.to)) this.remote.output.watermark(d.to, d.channel, wm);
        continue; // sinks take no watermarks
      }
      const wasIdle = this.idleNodes.has(d.to);
      host.processWatermark(wm, d.channel);
      if (wasIdle) this.updateIdle(d.to);
    }
  }

  private setSourceIdle(src: SourceRuntime, idle: boolean): void {
    src.idle = idle;
    this.propagateIdle(src.node.id, idle);
  }

  /** Flink's WatermarkStatus: a node whose inputs are all idle is idle and holds nobody back downstream. */
  private propagateIdle(fromId: string, idle: boolean): void {
    this.flush();
    for (const d of this.downstream.get(fromId) ?? []) {
      const host = this.hosts.get(d.to);
      if (host === undefined) {
        if (this.remote?.nodes.has(d.to)) this.remote.output.idle(d.to, d.channel, idle);
        continue;
      }
      host.markChannelIdle(d.channel, idle);
      this.updateIdle(d.to);
    }
  }

  private updateIdle(nodeId: string): void {
    const host = this.hosts.get(nodeId);
    if (host === undefined) return;
    const idle = host.idle;
    if (idle === this.idleNodes.has(nodeId)) return;
    if (idle) this.idleNodes.add(nodeId);
    else this.idleNodes.delete(nodeId);
    this.propagateIdle(nodeId, idle);
  }

  // ---- snapshot, metrics ---------------------------------------------------------------------------

  /**
   * Packs the state changed since the last snapshot now, so that the next snapshot packs only what
   * changes after this call: a runner calls it while it waits for input, taking that work off the
   * checkpoint's synchronous part (the exactly-once sinks commit only after it). Changes no output
   * and no snapshot's content. With `maxValues` it packs at most that many values, so that a
   * record arriving meanwhile waits for one slice and not for the whole; it returns whether
   * everything changed is packed (call again until it is).
   */
  materialize(maxValues = Number.POSITIVE_INFINITY): boolean {
    const budget: MaterializeBudget = { values: maxValues };
    let done = true;
    for (const host of this.hosts.values()) if (!host.materialize(budget)) done = false;
    return done;
  }

  /**
   * `key`'s state and timers at node `nodeId` now (queryKeyState over a snapshot), the timers its
   * snapshots leave implied in the state listed too (see OperatorSpec.impliedTimers).
   */
  queryState(nodeId: string, key: Key): KeyStateView | undefined {
    return queryKeyState(this.snapshot(), nodeId, key, this.hosts.get(nodeId)?.impliedTimers);
  }

  /**
   * The whole job's state: every operator's snapshot and every source's partition watermarks.
   * Emissions not yet drained are not part of it: drain (and write them) before snapshotting.
   * With `changelog`, a changelog checkpoint's snapshot, as snapshotPieces takes it.
   */
  snapshot(changelog?: ChangelogSnapshot): Uint8Array {
    return joinPieces(this.snapshotPieces(undefined, changelog));
  }

  /**
   * snapshot()'s bytes in pieces, most of them the state's own packed arrays (see
   * encodeSnapshotPieces): what a checkpoint writes with one gathered write, without copying the
   * state into one buffer while every record waits. The pieces never change; the caller may keep
   * them while the job goes on. With a `hold`, the caller releases it once it no longer reads them,
   * and the kept columns' buffers are then written again (see SnapshotHold). With `changelog`, a
   * changelog checkpoint's snapshot (KeyedStateBackend.snapshotChangelog): "whole" starts a chain,
   * "changes" holds only the keyed state changed since the last changelog snapshot, and restores
   * only through resolveChangelog (./changelog.ts).
   */
  snapshotPieces(hold?: SnapshotHold, changelog?: ChangelogSnapshot): SnapshotPieces {
    this.flush();
    const hosts = new Map<string, SnapshotPieces>();
    for (const id of this.graph.order) {
      const h = this.hosts.get(id);
      if (h) hosts.set(id, h.snapshotPieces(hold, changelog));
    }
    return encodeSnapshotPieces((ref) => this.snapshotValue(ref, hosts));
  }

  private snapshotValue(ref: PieceRef, hosts: ReadonlyMap<string, SnapshotPieces>): JobSnapshot {
    const nodes: Record<string, Uint8Array> = {};
    for (const [id, pieces] of hosts) nodes[id] = ref(pieces);
    const sources: JobSnapshot["sources"] = {};
    for (const [id, s] of this.sourceRuntimes) {
      sources[id] = { watermarks: s.watermarks.snapshot(), idle: s.idle, counters: [s.recordsIn, s.recordsOut, s.deadLetters] };
    }
    const snap: JobSnapshot = {
      format: JOB_SNAPSHOT_FORMAT,
      pipeline: this.document.name,
      processingTime: this.processingTime,
      nodes,
      sources,
      idleNodes: [...this.idleNodes].sort(),
      sinkCounts: Object.fromEntries([...this.sinkCounts].sort()),
      deadLetterCounts: Object.fromEntries([...this.deadLetterCounts].sort()),
    };
    return snap;
  }

  private restoreRuntime(snap: JobSnapshot): void {
    for (const [id, s] of Object.entries(snap.sources)) {
      const src = this.sourceRuntimes.get(id);
      if (!src) continue; // the source was removed from the pipeline
      src.watermarks.restore(s.watermarks);
      src.idle = s.idle;
      [src.recordsIn, src.recordsOut, src.deadLetters] = s.counters;
    }
    for (const id of snap.idleNodes) if (this.hosts.has(id)) this.idleNodes.add(id);
    for (const [id, n] of Object.entries(snap.sinkCounts)) if (this.sinkCounts.has(id)) this.sinkCounts.set(id, n);
    for (const [id, n] of Object.entries(snap.deadLetterCounts)) if (this.deadLetterCounts.has(id)) this.deadLetterCounts.set(id, n);
  }

  metrics(): Record<string, NodeMetrics> {
    this.flush();
    const out: Record<string, NodeMetrics> = {};
    for (const id of this.graph.order) {
      const deadLetters = this.deadLetterCounts.get(id) ?? 0;
      const host = this.hosts.get(id);
      const src = this.sourceRuntimes.get(id);
      if (host) out[id] = { ...pick(host.metrics()), deadLetters };
      else if (src) out[id] = { recordsIn: src.recordsIn, recordsOut: src.recordsOut, late: 0, deadLetters: src.deadLetters, keys: 0, timers: 0, stateBytes: 0, watermark: src.watermarks.watermark };
      else out[id] = { recordsIn: this.sinkCounts.get(id) ?? 0, recordsOut: 0, late: 0, deadLetters: 0, keys: 0, timers: 0, stateBytes: 0, watermark: MIN_WATERMARK };
    }
    return out;
  }

  /** The spec and parsed params of a node (for the runner's I/O on sources and sinks). */
  node(nodeId: string): { spec: OperatorSpec; params: unknown } | undefined {
    const n = this.graph.nodes.get(nodeId);
    return n ? { spec: n.spec, params: n.params } : undefined;
  }

  private source(id: string): SourceRuntime {
    const s = this.sourceRuntimes.get(id);
    if (!s) throw new Error(`no source node "${id}" in pipeline "${this.document.name}" (sources: ${[...this.sourceRuntimes.keys()].join(", ") || "none"})`);
    return s;
  }
}

function pick(m: ReturnType<OperatorHost["metrics"]>): Omit<NodeMetrics, "deadLetters"> {
  return { recordsIn: m.recordsIn, recordsOut: m.recordsOut, late: m.late, keys: m.keys, timers: m.timers, stateBytes: m.stateBytes, watermark: m.watermark };
}

interface JobSnapshot {
  format: typeof JOB_SNAPSHOT_FORMAT;
  pipeline: string;
  processingTime: number;
  nodes: Record<string, Uint8Array>;
  sources: Record<string, { watermarks: ReturnType<PartitionWatermarks["snapshot"]>; idle: boolean; counters: [number, number, number] }>;
  idleNodes: string[];
  sinkCounts: Record<string, number>;
  deadLetterCounts: Record<string, number>;
}

/** The path of the first field named "__proto__" in `value` (e.g. `$.a.__proto__`), or undefined. */
function protoFieldPath(value: JsonValue, at: string): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = protoFieldPath(value[i] as JsonValue, `${at}[${i}]`);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  if (Object.prototype.hasOwnProperty.call(value, "__proto__")) return `$${at}.__proto__`;
  for (const k of Object.keys(value)) {
    const p = protoFieldPath(value[k] as JsonValue, `${at}.${k}`);
    if (p !== undefined) return p;
  }
  return undefined;
}
