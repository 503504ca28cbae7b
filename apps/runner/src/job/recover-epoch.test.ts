// The recovery decision for an uncommitted checkpoint (./recover-epoch.ts): all lost → replay from
// the committed checkpoint before it, mixed → refuse, all committed → proceed. The broker's answers
// are given by a probe here; ../io/kafka/transactions.int.test.ts checks them against the real broker.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../log";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, type CheckpointMeta } from "./checkpoints";
import { DEAD_LETTERS, decideEpoch, recoverEpoch, type TransactionProbe } from "./recover-epoch";

const tx = (transactionalId: string, open = true) => ({ transactionalId, slot: 0, open, producerId: "7", producerEpoch: 3 });

function meta(id: number, sinks: CheckpointMeta["sinks"], deadLetters: CheckpointMeta["deadLetters"] = null): CheckpointMeta {
  return { format: CHECKPOINT_FORMAT, id, jobId: "j", pipeline: { name: "p", digest: "d" }, createdAt: "", processingTime: 0, stateBytes: 0, sources: { in: { offset: id * 10 } }, sinks, deadLetters };
}

/** A probe answering from `lost` (transactional id → broker answer), committed otherwise; records what it was asked. */
function probeOf(lost: Record<string, string>): TransactionProbe & { asked: string[] } {
  const asked: string[] = [];
  const probe = async (_owner: string, id: string) => {
    asked.push(id);
    const answer = lost[id];
    return answer === undefined ? { outcome: "committed" as const } : { outcome: "lost" as const, answer };
  };
  return Object.assign(probe, { asked });
}

async function storeWith(checkpoints: Array<{ meta: CheckpointMeta; committed: boolean }>): Promise<DirectoryCheckpointStore> {
  const store = new DirectoryCheckpointStore(mkdtempSync(path.join(tmpdir(), "keyflow-recover-")), 1);
  await store.acquire();
  for (const c of checkpoints) {
    await store.write(c.meta, new Uint8Array([c.meta.id]));
    if (c.committed) await store.markCommitted(c.meta.id);
  }
  return store;
}

function capture() {
  const lines: string[] = [];
  return { log: createLogger("info", "", (l) => lines.push(l)), lines };
}

describe("decideEpoch", () => {
  const lost = (owner: string, id: string) => ({ owner, kind: "kafka" as const, transactionalId: id, outcome: "lost" as const, answer: "INVALID_PRODUCER_EPOCH" });
  const committed = (owner: string, id: string) => ({ owner, kind: "kafka" as const, transactionalId: id, outcome: "committed" as const });

  it("every transaction lost: replay", () => {
    expect(decideEpoch(3, [lost('node "alerts"', "a.0"), lost(DEAD_LETTERS, "d.0"), { owner: 'node "dupes"', kind: "none" }])).toEqual({
      action: "replay",
      lost: ['node "alerts" (transactional id "a.0")', 'the dead-letter output (transactional id "d.0")'],
    });
  });

  it("nothing lost: proceed", () => {
    expect(decideEpoch(3, [committed('node "alerts"', "a.0"), { owner: DEAD_LETTERS, kind: "none" }])).toEqual({ action: "proceed" });
    expect(decideEpoch(3, [{ owner: DEAD_LETTERS, kind: "none" }, { owner: 'node "out"', kind: "other" }])).toEqual({ action: "proceed" });
  });

  it("some committed, some lost: refuse, naming the checkpoint and what was committed and lost", () => {
    const d = decideEpoch(3, [committed('node "alerts"', "a.1"), lost('node "dupes"', "b.1")]);
    expect(d.action).toBe("refuse");
    const message = d.action === "refuse" ? d.message : "";
    expect(message).toMatch(/^checkpoint 3 cannot be recovered exactly/);
    expect(message).toContain('lost (aborted by the broker, never visible): node "dupes" (transactional id "b.1"): INVALID_PRODUCER_EPOCH');
    expect(message).toContain('committed (visible to read_committed consumers): node "alerts" (transactional id "a.1")');
  });

  it("lost beside an output whose commit cannot be asked (a file sink): refuse", () => {
    const d = decideEpoch(4, [lost('node "alerts"', "a.0"), { owner: 'node "file"', kind: "other" }]);
    expect(d.action === "refuse" && d.message).toMatch(/pending outputs whose commit cannot be checked: node "file"/);
  });
});

describe("recoverEpoch against a checkpoint folder", () => {
  it("all lost: restores the committed checkpoint before (kept by retention 1 while the newer one is uncommitted) and warns", async () => {
    const store = await storeWith([
      { meta: meta(1, { alerts: tx("a.1") }), committed: true },
      { meta: meta(2, { alerts: tx("a.0"), dupes: tx("b.0", false) }, tx("d.0")), committed: false },
    ]);
    const latest = (await store.latest())!;
    expect([latest.meta.id, latest.committed]).toEqual([2, false]);
    const probe = probeOf({ "a.0": "PRODUCER_FENCED", "d.0": "INVALID_PRODUCER_EPOCH" });
    const { log, lines } = capture();
    const r = await recoverEpoch(latest, store, probe, log);
    expect(probe.asked).toEqual(["a.0", "d.0"]); // the epoch that wrote nothing under b.0 is not asked
    expect(r.restored?.meta.id).toBe(1);
    expect(r.restored?.committed).toBe(true);
    expect(r.restored?.meta.sources).toEqual({ in: { offset: 10 } });
    expect(r.replayed).toEqual({ lostCheckpoint: 2, lost: ['node "alerts" (transactional id "a.0")', 'the dead-letter output (transactional id "d.0")'] });
    expect(lines.join("\n")).toMatch(/WARN.*checkpoint 2 was written but never committed, and the broker aborted every transaction it lists .* replayed from checkpoint 1/i);
  });

  it("skips an older uncommitted checkpoint (an epoch replayed before) down to the committed one", async () => {
    const store = await storeWith([
      { meta: meta(4, { alerts: tx("a.0") }), committed: true },
      { meta: meta(5, { alerts: tx("a.1") }), committed: false },
      { meta: meta(6, { alerts: tx("a.0") }), committed: false },
    ]);
    const r = await recoverEpoch((await store.latest())!, store, probeOf({ "a.0": "PRODUCER_FENCED" }), capture().log);
    expect(r.restored?.meta.id).toBe(4);
  });

  it("no committed checkpoint before the lost one: starts anew", async () => {
    const store = await storeWith([{ meta: meta(1, { alerts: tx("a.0") }), committed: false }]);
    const r = await recoverEpoch((await store.latest())!, store, probeOf({ "a.0": "PRODUCER_FENCED" }), capture().log);
    expect(r.restored).toBeUndefined();
    expect(r.replayed?.lostCheckpoint).toBe(1);
  });

  it("mixed: throws the refusal, restores nothing", async () => {
    const store = await storeWith([
      { meta: meta(1, { alerts: tx("a.1") }), committed: true },
      { meta: meta(2, { alerts: tx("a.0") }, tx("d.0")), committed: false },
    ]);
    await expect(recoverEpoch((await store.latest())!, store, probeOf({ "d.0": "PRODUCER_FENCED" }), capture().log)).rejects.toThrow(
      /checkpoint 2 cannot be recovered exactly: .*lost .*the dead-letter output \(transactional id "d.0"\): PRODUCER_FENCED; committed .*node "alerts" \(transactional id "a.0"\)/,
    );
  });

  it("all committed, or already marked committed: restores the checkpoint itself", async () => {
    const store = await storeWith([{ meta: meta(1, { alerts: tx("a.1") }), committed: true }, { meta: meta(2, { alerts: tx("a.0") }), committed: false }]);
    expect((await recoverEpoch((await store.latest())!, store, probeOf({}), capture().log)).restored?.meta.id).toBe(2);
    const marked = await storeWith([{ meta: meta(1, { alerts: tx("a.1") }), committed: true }]);
    const probe = probeOf({ "a.1": "PRODUCER_FENCED" });
    expect((await recoverEpoch((await marked.latest())!, marked, probe, capture().log)).restored?.meta.id).toBe(1);
    expect(probe.asked).toEqual([]);
  });
});
