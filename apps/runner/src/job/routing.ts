// Where each branch of a rule job (./rule-job.ts) sends its alerts, and the switch of that routing
// at a checkpoint boundary. Every branch sink is a RoutedSink over two committing outputs (the
// enforcement topic and `<rule>.shadow`) that both take part in every checkpoint's two-phase
// commit. A requested mode change is bound to the first checkpoint whose barrier reaches the sinks
// after the request: at that barrier's prepareCommit, all sinks of the job flush their epoch under
// the old routing (transaction N), then write everything after it under the new one (transaction
// N+1). So with exactly-once sinks the switch falls between two transactions: no gap, no alert
// enforced twice. The routing in force after checkpoint N is part of checkpoint N (the sinks'
// prepared state), so a restore resumes with the routing of the checkpoint it restores; a switch
// whose checkpoint never completed (the job failed first) is lost with that epoch's output and
// reported as failed. A completed switch reports its checkpoint id and the sources' positions at
// the boundary (Kafka: the next offset per partition, so records before it were routed the old way).
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";
import type { Connectors, JobIoNode } from "./driver";
import type { RecordSink, SinkRecord } from "../io/types";
import { RULE_VERSION_FIELD, RULE_VERSION_HEADER } from "@keyflow/operators";
import { branchModeSchema, type BranchMode, type BranchSinkRoute } from "./rule-job";

export interface RoutingSwitch {
  /** The checkpoint at whose barrier the routing changed: its output is the last under `before`. */
  checkpointId: number;
  /** Each source's position in that checkpoint: where the new routing starts. */
  sources: Record<string, JsonValue>;
  before: Record<string, BranchMode>;
  after: Record<string, BranchMode>;
  requestedAt: string;
  completedAt: string;
}

export interface RoutingView {
  modes: Record<string, BranchMode>;
  /** A switch asked for and not yet completed. */
  pending: { modes: Record<string, BranchMode>; boundCheckpointId: number | null; requestedAt: string } | null;
  /** Completed switches of this runner process, oldest first. */
  switches: RoutingSwitch[];
  /** Alerts of stopped branches, not written anywhere (per version). */
  discarded: Record<string, number>;
}

export class RoutingError extends Error {}

interface Pending {
  modes: Map<number, BranchMode>;
  before: Map<number, BranchMode> | undefined;
  boundTo: number | undefined;
  requestedAt: number;
  resolve: (s: RoutingSwitch) => void;
  reject: (err: Error) => void;
}

const toRecord = (m: ReadonlyMap<number, BranchMode>): Record<string, BranchMode> => Object.fromEntries([...m].sort((a, b) => a[0] - b[0]).map(([v, mode]) => [String(v), mode]));

export class RuleRouting {
  private readonly modes: Map<number, BranchMode>;
  private pending: Pending | undefined;
  private readonly history: RoutingSwitch[] = [];
  private readonly discardedByVersion = new Map<number, number>();

  constructor(
    private readonly initial: ReadonlyMap<number, BranchMode>,
    private readonly now: () => number = Date.now,
  ) {
    this.modes = new Map(initial);
  }

  get versions(): number[] {
    return [...this.initial.keys()].sort((a, b) => a - b);
  }

  modeOf(version: number): BranchMode {
    const mode = this.modes.get(version);
    if (mode === undefined) throw new RoutingError(`version ${version} is not a branch of this rule job`);
    return mode;
  }

  /** A sink opened from a checkpoint that recorded `mode` for its version (or from nothing: the initial mode). */
  restore(version: number, mode: BranchMode | undefined): void {
    this.modes.set(version, mode ?? this.initial.get(version) ?? "stopped");
  }

  /**
   * Asks for new modes (the versions not named keep theirs); resolves once the checkpoint at whose
   * barrier they took effect has completed. One switch at a time; at most one enforcing version.
   */
  request(changes: Record<string, BranchMode>): Promise<RoutingSwitch> {
    if (this.pending) return Promise.reject(new RoutingError(`a routing switch to ${JSON.stringify(toRecord(this.pending.modes))} is already under way`));
    const next = new Map(this.modes);
    for (const [key, mode] of Object.entries(changes)) {
      const version = Number(key);
      if (!this.modes.has(version)) return Promise.reject(new RoutingError(`version ${key} is not a branch of this rule job (its versions: ${this.versions.join(", ")})`));
      next.set(version, mode);
    }
    const enforcing = [...next].filter(([, m]) => m === "enforcing").map(([v]) => v);
    if (enforcing.length > 1) return Promise.reject(new RoutingError(`versions ${enforcing.join(" and ")} would both enforce: at most one version of a rule enforces at a time`));
    return new Promise<RoutingSwitch>((resolve, reject) => {
      this.pending = { modes: next, before: undefined, boundTo: undefined, requestedAt: this.now(), resolve, reject };
    });
  }

  /**
   * Called by every routed sink at the start of its prepareCommit for checkpoint `id`, before any
   * await: the sinks of one checkpoint are prepared together, so they all see the same binding. The
   * first barrier after a request takes the switch; its sinks write what follows with the new modes.
   */
  atBarrier(id: number): void {
    const p = this.pending;
    if (!p || (p.boundTo !== undefined && p.boundTo !== id)) return;
    if (p.boundTo === undefined) {
      p.boundTo = id;
      p.before = new Map(this.modes);
      for (const [v, m] of p.modes) this.modes.set(v, m);
    }
  }

  /** Checkpoint `id` completed (durable, sinks committed): a switch bound to it is done. */
  completed(id: number, sources: Record<string, JsonValue>): void {
    const p = this.pending;
    if (!p || p.boundTo !== id) return;
    this.pending = undefined;
    const s: RoutingSwitch = {
      checkpointId: id,
      sources,
      before: toRecord(p.before ?? new Map()),
      after: toRecord(p.modes),
      requestedAt: new Date(p.requestedAt).toISOString(),
      completedAt: new Date(this.now()).toISOString(),
    };
    this.history.push(s);
    if (this.history.length > 100) this.history.shift();
    p.resolve(s);
  }

  /** The run ended or failed before the switch's checkpoint completed: the switch did not happen (a restore resumes the checkpoint's routing). */
  abort(why: string): void {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    p.reject(new RoutingError(`the routing switch to ${JSON.stringify(toRecord(p.modes))} did not complete: ${why}`));
  }

  discarded(version: number, n: number): void {
    this.discardedByVersion.set(version, (this.discardedByVersion.get(version) ?? 0) + n);
  }

  view(): RoutingView {
    const p = this.pending;
    return {
      modes: toRecord(this.modes),
      pending: p ? { modes: toRecord(p.modes), boundCheckpointId: p.boundTo ?? null, requestedAt: new Date(p.requestedAt).toISOString() } : null,
      switches: [...this.history],
      discarded: Object.fromEntries([...this.discardedByVersion].map(([v, n]) => [String(v), n])),
    };
  }
}

/** What a routed sink stores in a checkpoint: its version's mode after the checkpoint and both outputs' prepared epochs. */
const routedPreparedSchema = z.object({
  version: z.number().int(),
  mode: branchModeSchema,
  enforcing: z.custom<JsonValue>(() => true),
  shadow: z.custom<JsonValue>(() => true),
});

/** A branch's sink: writes its alerts, tagged with the version, to the output its mode names. */
export class RoutedSink implements RecordSink {
  constructor(
    readonly nodeId: string,
    private readonly version: number,
    private readonly enforcing: RecordSink,
    private readonly shadow: RecordSink,
    private readonly routing: RuleRouting,
  ) {}

  get target(): string {
    return `${this.enforcing.target} when enforcing, ${this.shadow.target} in shadow (version ${this.version})`;
  }

  async open(restored: JsonValue | undefined, restoredCommitted?: boolean): Promise<void> {
    let prior: z.infer<typeof routedPreparedSchema> | undefined;
    if (restored !== undefined && restored !== null) {
      const parsed = routedPreparedSchema.safeParse(restored);
      // A checkpoint of this node from before it was routed (not a rule job) cannot say which output holds its epoch.
      if (!parsed.success) throw new Error(`node "${this.nodeId}": the checkpoint's sink state is not a rule job's routed sink state: ${JSON.stringify(restored).slice(0, 200)}`);
      prior = parsed.data;
    }
    await Promise.all([this.enforcing.open(prior?.enforcing, restoredCommitted), this.shadow.open(prior?.shadow, restoredCommitted)]);
    this.routing.restore(this.version, prior?.mode);
  }

  write(records: readonly SinkRecord[]): Promise<void> {
    const mode = this.routing.modeOf(this.version);
    if (mode === "stopped") {
      this.routing.discarded(this.version, records.length);
      return Promise.resolve();
    }
    const version = String(this.version);
    // Built field by field: a spread would keep a serialized record's `json`, the value before tagging.
    const tagged = records.map(
      (r): SinkRecord => ({
        value: { ...r.value, [RULE_VERSION_FIELD]: this.version },
        timestamp: r.timestamp,
        ...(r.key !== undefined ? { key: r.key } : {}),
        headers: { ...r.headers, [RULE_VERSION_HEADER]: version },
      }),
    );
    return (mode === "enforcing" ? this.enforcing : this.shadow).write(tagged);
  }

  async prepareCommit(checkpointId: number): Promise<JsonValue> {
    // Synchronously, before any await: every routed sink of this checkpoint sees the same switch.
    this.routing.atBarrier(checkpointId);
    const mode = this.routing.modeOf(this.version);
    const [enforcing, shadow] = await Promise.all([this.enforcing.prepareCommit(checkpointId), this.shadow.prepareCommit(checkpointId)]);
    return { version: this.version, mode, enforcing, shadow };
  }

  async commit(checkpointId: number, prepared: JsonValue): Promise<void> {
    const p = routedPreparedSchema.parse(prepared);
    await Promise.all([this.enforcing.commit(checkpointId, p.enforcing), this.shadow.commit(checkpointId, p.shadow)]);
  }

  async close(): Promise<void> {
    await Promise.all([this.enforcing.close(), this.shadow.close()]);
  }
}

/**
 * One enforcement file for the branches whose file sinks name it: a file has one writer (two
 * CommittedFiles on one path each rewrote it under the other: a restart left it with NUL bytes and
 * without alerts). Every branch's RoutedSink holds a handle; the file is opened once all handles
 * have been opened (the driver opens its sinks together), with the state one of them restored;
 * prepared and committed once per checkpoint (every handle stores the same prepared state), and
 * written in the order the writes arrive.
 */
class SharedFileOutput {
  private readonly restored: (JsonValue | undefined)[] = [];
  private opening: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  private writes: Promise<void> = Promise.resolve();
  private readonly prepared = new Map<number, Promise<JsonValue>>();
  private readonly committed = new Map<number, Promise<void>>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly file: RecordSink,
    private readonly handles: number,
  ) {}

  handle(nodeId: string): RecordSink {
    return {
      nodeId,
      target: this.file.target,
      open: (restored, restoredCommitted) => this.open(restored, restoredCommitted),
      write: (records) => (this.writes = this.writes.then(() => this.file.write(records))),
      prepareCommit: (id) => this.prepareCommit(id),
      commit: (id, prepared) => this.commit(id, prepared),
      close: () => (this.closing ??= this.writes.then(() => this.file.close())),
    };
  }

  private open(restored: JsonValue | undefined, restoredCommitted: boolean | undefined): Promise<void> {
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    this.opening ??= { promise: new Promise<void>((res, rej) => ((resolve = res), (reject = rej))), resolve, reject };
    const opening = this.opening;
    this.restored.push(restored ?? undefined);
    if (this.restored.length === this.handles) {
      // A branch added since the checkpoint restores nothing: the others' state says where the file stands.
      const state = this.restored.find((r) => r !== undefined && r !== null);
      this.file.open(state, restoredCommitted).then(opening.resolve, opening.reject);
    }
    return opening.promise;
  }

  private prepareCommit(id: number): Promise<JsonValue> {
    let p = this.prepared.get(id);
    if (!p) {
      p = this.writes.then(() => this.file.prepareCommit(id));
      this.prepared.set(id, p);
      for (const old of this.prepared.keys()) if (old < id - 16) this.prepared.delete(old);
    }
    return p;
  }

  private commit(id: number, prepared: JsonValue): Promise<void> {
    let c = this.committed.get(id);
    if (!c) {
      c = this.file.commit(id, prepared);
      this.committed.set(id, c);
      for (const old of this.committed.keys()) if (old < id - 16) this.committed.delete(old);
    }
    return c;
  }
}

/** The rule job's connectors: each branch sink becomes a RoutedSink over the plain connectors' two outputs. */
export function routeConnectors(plain: Connectors, routes: readonly BranchSinkRoute[], routing: RuleRouting): Connectors {
  const byNode = new Map(routes.map((r) => [r.nodeId, r]));
  const fileUsers = new Map<string, number>();
  for (const r of routes) if (r.enforcementFile !== undefined) fileUsers.set(r.enforcementFile, (fileUsers.get(r.enforcementFile) ?? 0) + 1);
  const sharedFiles = new Map<string, SharedFileOutput>();
  const enforcingOutput = (node: JobIoNode, route: BranchSinkRoute): RecordSink => {
    const file = route.enforcementFile;
    if (file === undefined) return plain.sink(node); // Kafka: each branch its own transactions into the one topic
    let shared = sharedFiles.get(file);
    if (!shared) sharedFiles.set(file, (shared = new SharedFileOutput(plain.sink(node), fileUsers.get(file) ?? 1)));
    return shared.handle(node.nodeId);
  };
  return {
    source: (node) => plain.source(node),
    sink: (node: JobIoNode) => {
      const route = byNode.get(node.nodeId);
      if (!route) return plain.sink(node);
      const params = (node.params ?? {}) as Record<string, unknown>;
      // The shadow output is a sink of its own: its own node id, so its own Kafka transactional ids.
      const shadow = plain.sink({ ...node, nodeId: `${node.nodeId}-shadow`, params: { ...params, ...route.shadowOverrides } });
      return new RoutedSink(node.nodeId, route.version, enforcingOutput(node, route), shadow, routing);
    },
    deadLetters: () => plain.deadLetters(),
    close: () => plain.close(),
  };
}
