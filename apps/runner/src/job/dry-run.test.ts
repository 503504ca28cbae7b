// The dry run on a sample: counts per node and port, alerts with the sample records that caused
// them, dead letters, and the replay order of several sources.
import { describe, expect, it } from "vitest";
import { validPipeline as parse } from "@keyflow/operators/testing";
import { dryRun, primarySource } from "./dry-run";
import { referenceOnlySources } from "./source-order";

const velocityPipeline = parse({
  format: "keyflow.pipeline/v1",
  name: "velocity-sample",
  nodes: [
    { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
    { id: "byCard", type: "keyBy", params: { field: "cardId" } },
    { id: "vel", type: "velocity", params: { threshold: 3, windowMs: "1m", idField: "txId" } },
    { id: "alerts", type: "sink.file", params: { path: "alerts.jsonl" } },
  ],
  edges: [
    { from: "payments", to: "byCard" },
    { from: "byCard", to: "vel" },
    { from: "vel", to: "alerts" },
  ],
});

const t0 = Date.parse("2026-03-01T10:00:00Z");
const pay = (txId: string, cardId: string, s: number, amount = 10) => JSON.stringify({ txId, cardId, amount, ts: t0 + s * 1000 });

const sample = [
  pay("t1", "A", 0),
  pay("t2", "A", 10),
  pay("t3", "B", 15),
  pay("t4", "A", 20), // A's 3rd within a minute: alert
  pay("t5", "A", 30), // 4th: alert
  "{not json",
  pay("t6", "B", 200),
  "",
  pay("late", "A", 5), // behind the watermark (out-of-orderness 0): late, unconnected, dead letter
];

describe("dryRun", () => {
  it("counts records per node and port, and lists the alerts with the sample records behind them", async () => {
    const r = await dryRun(velocityPipeline, [{ sourceNodeId: "payments", lines: sample, label: "sample.jsonl" }], { now: t0 });
    expect(r.inputs).toEqual({ payments: { records: 8, label: "sample.jsonl" } });
    expect(r.nodes.payments?.ports.out?.count).toBe(7);
    expect(r.nodes.byCard?.ports.out?.count).toBe(7);
    expect(r.nodes.vel?.ports.out?.count).toBe(2);
    expect(r.nodes.vel?.ports.late?.count).toBe(1);
    expect(r.nodes.alerts?.ports.in?.count).toBe(2);
    expect(r.nodes.alerts?.type).toBe("sink.file");
    expect(r.nodes.payments?.ports.out?.records[0]).toEqual({ value: JSON.parse(sample[0] as string), timestamp: t0 });
    expect(r.nodes.byCard?.ports.out?.records[0]?.key).toBeDefined();

    expect(r.alerts.count).toBe(2);
    const [first, second] = r.alerts.items;
    expect(first?.sinkNodeId).toBe("alerts");
    expect(first?.value).toMatchObject({ count: 3 });
    expect(first?.evidence.map((e) => [e.id, e.line])).toEqual([
      ["t1", 1],
      ["t2", 2],
      ["t4", 4],
    ]);
    expect(first?.evidenceTotal).toBe(3);
    expect(second?.evidence.map((e) => e.id)).toEqual(["t1", "t2", "t4", "t5"]);
    expect(second?.evidence[3]?.value).toEqual(JSON.parse(sample[4] as string));

    expect(r.deadLetters.count).toBe(2);
    expect(r.deadLetters.items[0]).toMatchObject({ nodeId: "payments", line: 6, raw: "{not json" });
    expect(r.deadLetters.items[0]?.reason).toMatch(/not valid JSON/);
    expect(r.deadLetters.items[1]).toMatchObject({ nodeId: "vel", port: "late" });
    expect(r.warnings).toEqual([]);
  });

  it("keeps the first records of each port and says when lists are cut", async () => {
    const many = Array.from({ length: 30 }, (_, i) => pay(`m${i}`, "C", i));
    const r = await dryRun(velocityPipeline, [{ sourceNodeId: "payments", lines: many, label: "many" }], { recordLimit: 5, now: t0 });
    expect(r.nodes.payments?.ports.out).toMatchObject({ count: 30 });
    expect(r.nodes.payments?.ports.out?.records).toHaveLength(5);
    expect(r.alerts.count).toBe(28);
    expect(r.alerts.items).toHaveLength(5);
    expect(r.warnings.join("\n")).toMatch(/28 records reached the sinks; the first 5 are listed/);
  });

  it("resolves a filter's alerts to the sample record itself", async () => {
    const doc = parse({
      format: "keyflow.pipeline/v1",
      name: "large",
      nodes: [
        { id: "in", type: "source.file", params: { path: "x.jsonl", timestampField: "ts" } },
        { id: "large", type: "filter", params: { expression: "amount > 100" } },
        { id: "out", type: "sink.file", params: { path: "y.jsonl" } },
      ],
      edges: [
        { from: "in", to: "large" },
        { from: "large", to: "out" },
      ],
    });
    const r = await dryRun(doc, [{ sourceNodeId: "in", lines: [pay("a", "A", 0, 50), pay("b", "A", 1, 500)], label: "s" }]);
    expect(r.alerts.count).toBe(1);
    expect(r.alerts.items[0]?.evidence).toEqual([{ sourceNodeId: "in", line: 2, ts: t0 + 1000, value: JSON.parse(pay("b", "A", 1, 500)) }]);
    // a filter has an errors port: listed with 0 even though nothing went there
    expect(r.nodes.large?.ports.errors).toEqual({ count: 0, records: [] });
  });

  it("replays a reference-only source first and warns about sources without a sample", async () => {
    const doc = parse({
      format: "keyflow.pipeline/v1",
      name: "enriched",
      nodes: [
        { id: "payments", type: "source.file", params: { path: "p.jsonl", timestampField: "ts" } },
        { id: "merchants", type: "source.file", params: { path: "m.jsonl", timestampField: "ts" } },
        { id: "enrich", type: "enrich.broadcast", params: { keyField: "merchantId", referenceKeyField: "id", targetField: "merchant" } },
        { id: "out", type: "sink.file", params: { path: "o.jsonl" } },
        { id: "misses", type: "sink.file", params: { path: "miss.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "enrich" },
        { from: "merchants", to: "enrich:reference" },
        { from: "enrich", to: "out" },
        { from: "enrich:miss", to: "misses" },
      ],
    });
    expect([...referenceOnlySources(doc)]).toEqual(["merchants"]);
    expect(primarySource(doc)).toBe("payments");
    const payments = [JSON.stringify({ id: "p1", merchantId: "m1", ts: t0 + 5000 }), JSON.stringify({ id: "p2", merchantId: "m2", ts: t0 + 6000 })];
    const merchants = [JSON.stringify({ id: "m1", name: "Shop", ts: t0 })];
    // the payments are given first, but the reference table is loaded before them
    const r = await dryRun(doc, [
      { sourceNodeId: "payments", lines: payments, label: "payments" },
      { sourceNodeId: "merchants", lines: merchants, label: "merchants" },
    ]);
    expect(r.nodes.enrich?.ports.out?.count).toBe(1);
    expect(r.nodes.enrich?.ports.miss?.count).toBe(1);
    expect(r.nodes.out?.ports.in?.records[0]?.value).toMatchObject({ id: "p1", merchant: { name: "Shop" } });

    const alone = await dryRun(doc, [{ sourceNodeId: "payments", lines: payments, label: "payments" }]);
    expect(alone.warnings).toEqual([`source "merchants" was given no sample: its input was empty`]);
    expect(alone.nodes.enrich?.ports.miss?.count).toBe(2);
  });

  it("refuses a sample for a node that is not a source", async () => {
    await expect(dryRun(velocityPipeline, [{ sourceNodeId: "vel", lines: [], label: "x" }])).rejects.toThrow(/node "vel" is not a source/);
  });
  it("runs process.custom in the runner's sandbox (as a job does) and closes it after the run", async () => {
    const code = `
export function processElement(record: InputRecord, ctx: Context): void {
  const count = ctx.state.value<number>("count");
  const n = (count.value() ?? 0) + 1;
  count.update(n);
  if (n >= 2) ctx.output({ cardId: record.key, count: n, txId: record.value.txId });
}`;
    const doc = parse({
      format: "keyflow.pipeline/v1",
      name: "custom-sample",
      nodes: [
        { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
        { id: "byCard", type: "keyBy", params: { field: "cardId" } },
        { id: "mine", type: "process.custom", params: { code } },
        { id: "alerts", type: "sink.file", params: { path: "alerts.jsonl" } },
      ],
      edges: [
        { from: "payments", to: "byCard" },
        { from: "byCard", to: "mine" },
        { from: "mine", to: "alerts" },
      ],
    });
    const r = await dryRun(doc, [{ sourceNodeId: "payments", lines: [pay("t1", "A", 0), pay("t2", "B", 1), pay("t3", "A", 2)], label: "sample.jsonl" }], { now: t0 });
    expect(r.inputs.payments).toEqual({ records: 3, label: "sample.jsonl" });
    expect(r.nodes.mine).toMatchObject({ type: "process.custom", recordsIn: 3, recordsOut: 1 });
    expect(r.deadLetters.count).toBe(0);
    expect(r.alerts.count).toBe(1);
    expect(r.alerts.items[0]).toMatchObject({ sinkNodeId: "alerts", key: "A", value: { cardId: "A", count: 2, txId: "t3" } });
    // Nothing left running: the run's sandboxes were closed before it settled.
    expect(r.warnings).toEqual([]);
  }, 60_000);
});
