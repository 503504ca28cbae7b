// The routing of a rule job's branches and its switch at a checkpoint boundary, over in-memory
// committing outputs (the Kafka path is promotion-switch.int.test.ts): what is written before the
// barrier belongs to the old routing's epoch, what follows to the new one; the checkpoint records
// the routing after it; a restore resumes it; a switch whose checkpoint never completed is refused.
import { describe, expect, it } from "vitest";
import type { JsonValue } from "@keyflow/operators";
import { SerializedSinkRecord, type RecordSink, type SinkRecord } from "../io/types";
import { RULE_VERSION_FIELD, RULE_VERSION_HEADER } from "@keyflow/operators";
import { composeRuleJob, inVersionTerms } from "./rule-job";
import { RoutedSink, RuleRouting } from "./routing";

/** Epochs staged until committed, like the exactly-once sinks: `committed` is what a read_committed reader sees. */
class MemorySink implements RecordSink {
  readonly committed: { epoch: number; record: SinkRecord }[] = [];
  private staged: SinkRecord[] = [];
  private readonly prepared = new Map<number, SinkRecord[]>();
  constructor(readonly nodeId: string) {}
  get target() {
    return `memory:${this.nodeId}`;
  }
  open(): Promise<void> {
    this.staged = [];
    return Promise.resolve();
  }
  write(records: readonly SinkRecord[]): Promise<void> {
    this.staged.push(...records);
    return Promise.resolve();
  }
  prepareCommit(id: number): Promise<JsonValue> {
    this.prepared.set(id, this.staged);
    this.staged = [];
    return Promise.resolve({ id });
  }
  commit(id: number): Promise<void> {
    for (const record of this.prepared.get(id) ?? []) this.committed.push({ epoch: id, record });
    this.prepared.delete(id);
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

const alert = (txId: string): SinkRecord => ({ value: { txId }, timestamp: 1 });

function branch(routing: RuleRouting, version: number) {
  const enforcing = new MemorySink(`v${version}-alerts`);
  const shadow = new MemorySink(`v${version}-alerts-shadow`);
  return { enforcing, shadow, sink: new RoutedSink(`v${version}-alerts`, version, enforcing, shadow, routing) };
}

async function checkpoint(id: number, routing: RuleRouting, sinks: RoutedSink[]): Promise<JsonValue[]> {
  const prepared = await Promise.all(sinks.map((s) => s.prepareCommit(id)));
  await Promise.all(sinks.map((s, i) => s.commit(id, prepared[i] ?? null)));
  routing.completed(id, { payments: { next: { "0": id * 10 } } });
  return prepared;
}

describe("a rule job's routing", () => {
  it("switches enforcement from v3 to v4 at one barrier: the epochs before it under the old routing, after it under the new, each alert once", async () => {
    const routing = new RuleRouting(new Map([[3, "enforcing"], [4, "shadow"]]));
    const v3 = branch(routing, 3);
    const v4 = branch(routing, 4);
    await Promise.all([v3.sink.open(undefined), v4.sink.open(undefined)]);
    await v3.sink.write([alert("a3")]);
    await v4.sink.write([alert("a4")]);
    await checkpoint(1, routing, [v3.sink, v4.sink]);

    await v3.sink.write([alert("b3")]);
    await v4.sink.write([alert("b4")]);
    const switched = routing.request({ 4: "enforcing", 3: "stopped" });
    // Requested mid-epoch: what was written before the barrier still goes the old way.
    await v3.sink.write([alert("c3")]);
    const prepared = await checkpoint(2, routing, [v3.sink, v4.sink]);
    const report = await switched;
    expect(report).toMatchObject({ checkpointId: 2, sources: { payments: { next: { "0": 20 } } }, before: { "3": "enforcing", "4": "shadow" }, after: { "3": "stopped", "4": "enforcing" } });
    expect(prepared.map((p) => (p as { mode: string }).mode)).toEqual(["stopped", "enforcing"]);

    await v3.sink.write([alert("d3")]);
    await v4.sink.write([alert("d4")]);
    await checkpoint(3, routing, [v3.sink, v4.sink]);

    const ids = (s: MemorySink) => s.committed.map((c) => `${String(c.record.value.txId)}@${c.epoch}`);
    expect(ids(v3.enforcing)).toEqual(["a3@1", "b3@2", "c3@2"]);
    expect(ids(v4.enforcing)).toEqual(["d4@3"]);
    expect(ids(v4.shadow)).toEqual(["a4@1", "b4@2"]);
    expect(ids(v3.shadow)).toEqual([]);
    expect(routing.view().discarded).toEqual({ "3": 1 });
    // Every alert names its version, in the record and in a header.
    expect(v4.enforcing.committed[0]?.record).toMatchObject({ value: { txId: "d4", [RULE_VERSION_FIELD]: 4 }, headers: { [RULE_VERSION_HEADER]: "4" } });
  });

  it("tags a record that a keyed subtask serialized: the sink gets the tagged value and no stale JSON text", async () => {
    const routing = new RuleRouting(new Map([[5, "shadow"]]));
    const v5 = branch(routing, 5);
    await v5.sink.open(undefined);
    await v5.sink.write([new SerializedSinkRecord(JSON.stringify({ txId: "s5", amount: 3 }), 7, "card-1")]);
    await checkpoint(1, routing, [v5.sink]);
    const written = v5.shadow.committed[0]?.record;
    expect(written).toEqual({ value: { txId: "s5", amount: 3, [RULE_VERSION_FIELD]: 5 }, timestamp: 7, key: "card-1", headers: { [RULE_VERSION_HEADER]: "5" } });
    expect(written?.json).toBeUndefined();
  });

  it("restores the routing a checkpoint recorded, and refuses a switch whose checkpoint never completed", async () => {
    const routing = new RuleRouting(new Map([[3, "enforcing"], [4, "shadow"]]));
    const v3 = branch(routing, 3);
    const v4 = branch(routing, 4);
    const switched = routing.request({ 4: "enforcing", 3: "shadow" });
    const prepared = await Promise.all([v3.sink.prepareCommit(7), v4.sink.prepareCommit(7)]);
    expect(routing.view().modes).toEqual({ "3": "shadow", "4": "enforcing" });
    // The run dies before checkpoint 7 is written; the next restores checkpoint 6 (old routing).
    routing.abort("the job restarted");
    await expect(switched).rejects.toThrow(/did not complete: the job restarted/);
    await v3.sink.open({ version: 3, mode: "enforcing", enforcing: null, shadow: null });
    await v4.sink.open({ version: 4, mode: "shadow", enforcing: null, shadow: null });
    expect(routing.view().modes).toEqual({ "3": "enforcing", "4": "shadow" });
    // A restore of checkpoint 7 (had it completed) resumes the new routing.
    await v3.sink.open(prepared[0]);
    await v4.sink.open(prepared[1]);
    expect(routing.view().modes).toEqual({ "3": "shadow", "4": "enforcing" });
  });

  it("refuses two enforcing versions, unknown versions and a second switch while one is under way", async () => {
    const routing = new RuleRouting(new Map([[3, "enforcing"], [4, "shadow"]]));
    await expect(routing.request({ 4: "enforcing" })).rejects.toThrow(/versions 3 and 4 would both enforce/);
    await expect(routing.request({ 5: "shadow" })).rejects.toThrow(/version 5 is not a branch of this rule job \(its versions: 3, 4\)/);
    void routing.request({ 4: "stopped" });
    await expect(routing.request({ 3: "stopped" })).rejects.toThrow(/already under way/);
  });
});

describe("composing a rule job", () => {
  const version = (threshold: number, topic = "payments") => ({
    format: "keyflow.pipeline/v1",
    name: "card-velocity",
    settings: { checkpointIntervalMs: 500 },
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic, timestampField: "ts" } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" } },
      { id: "alerts", type: "sink.kafka", params: { topic: "enforcement", deliveryGuarantee: "exactly-once" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  });

  it("shares the versions' common source and namespaces every other node by version", () => {
    const r = composeRuleJob({ name: "card-velocity", branches: [{ version: 4, mode: "shadow", pipeline: version(3) }, { version: 3, mode: "enforcing", pipeline: version(4) }] }, ".");
    if (!r.ok) throw new Error(r.problems.join("\n"));
    expect(r.job.doc.nodes.map((n) => n.id)).toEqual(["payments", "v3-byCard", "v3-velocity", "v3-alerts", "v4-byCard", "v4-velocity", "v4-alerts"]);
    expect(r.job.doc.edges).toContainEqual({ from: "payments", to: "v4-byCard" });
    expect(r.job.doc.settings).toMatchObject({ checkpointIntervalMs: 500, deadLetterTopic: "card-velocity.dlq" });
    expect(r.job.routes).toEqual([
      { nodeId: "v3-alerts", version: 3, shadowOverrides: { topic: "card-velocity.shadow" } },
      { nodeId: "v4-alerts", version: 4, shadowOverrides: { topic: "card-velocity.shadow" } },
    ]);
    expect(r.job.initialModes).toEqual(new Map([[3, "enforcing"], [4, "shadow"]]));
  });

  it("gives a version whose source changed a source of its own, and names the problems of bad input", () => {
    const r = composeRuleJob({ name: "card-velocity", branches: [{ version: 1, mode: "enforcing", pipeline: version(4) }, { version: 2, mode: "shadow", pipeline: version(3, "other") }] }, ".");
    if (!r.ok) throw new Error(r.problems.join("\n"));
    expect(r.job.doc.nodes.map((n) => n.id)).toContain("v2-payments");
    expect(r.warnings.join("\n")).toMatch(/version 2: source "payments" differs/);
    const bad = composeRuleJob({ name: "card-velocity", branches: [{ version: 1, mode: "enforcing", pipeline: version(4) }, { version: 2, mode: "enforcing", pipeline: version(-1) }] }, ".");
    expect(bad.ok).toBe(false);
    if (!bad.ok) {
      expect(bad.problems.join("\n")).toMatch(/versions 1 and 2 are both enforcing/);
      expect(bad.problems.join("\n")).toMatch(/version 2: error: node "velocity": param "threshold"/);
    }
  });
});

describe("a rule job's problems in its versions' terms", () => {
  it("names the version's own node id and the version", () => {
    expect(inVersionTerms('node "v1-risk" (velocity) has state in "/sp" but is not in the pipeline')).toBe('node "risk" (velocity) has state in "/sp" but is not in the pipeline (version 1)');
    expect(inVersionTerms('node "payments": fine')).toBe('node "payments": fine');
  });
});
