import { describe, expect, it } from "vitest";
import { alertLabel, alertRecordId, compareAlerts, parseAlert, type ReadAlert } from "./comparison-stats";

const HOUR = 3_600_000;
let offset = 0;
function alert(txId: string | null, ts: number, isFraud?: boolean): ReadAlert {
  const event: Record<string, unknown> = { cardId: "c1", ts };
  if (txId !== null) event.txId = txId;
  if (isFraud !== undefined) event.isFraud = isFraud;
  return { topic: "t", partition: 0, offset: String(offset++), timestamp: ts, key: "c1", value: { key: "c1", ts, count: 4, event, evidence: { records: [{ id: "earlier", ts: ts - 1 }], total: 1 } } };
}
const none = { fromTs: null, toTs: null };

describe("compareAlerts", () => {
  it("matches alerts by the firing record's id: in both, only new, only old, with samples and counts per hour", () => {
    const fresh = [alert("a", 0), alert("b", HOUR + 5), alert("c", HOUR + 6)];
    const old = [alert("a", 0), alert("d", 2 * HOUR)];
    const stats = compareAlerts(fresh, old, { idField: "txId", range: none, samples: 1, labelField: null, fraudIds: null });
    expect(stats.counts).toEqual({ both: 1, onlyNew: 2, onlyOld: 1, newTotal: 3, oldTotal: 2 });
    expect(stats.samples.onlyNew).toHaveLength(1);
    expect(stats.samples.both[0]?.old.value.event).toMatchObject({ txId: "a" });
    expect(stats.perHour).toEqual([
      { hourStart: 0, new: 1, old: 1 },
      { hourStart: HOUR, new: 2, old: 0 },
      { hourStart: 2 * HOUR, new: 0, old: 1 },
    ]);
    expect(stats.scores).toBeNull();
  });

  it("counts a record alerted twice in one topic once, and says so", () => {
    const stats = compareAlerts([alert("a", 0), alert("a", 0)], [alert("a", 0)], { idField: "txId", range: none, samples: 3, labelField: null, fraudIds: null });
    expect(stats.counts.both).toBe(1);
    expect(stats.repeated).toEqual({ new: 1, old: 0 });
  });

  it("keeps only alerts inside the event-time range", () => {
    const stats = compareAlerts([alert("a", 0), alert("b", 10)], [alert("b", 10), alert("c", 20)], { idField: "txId", range: { fromTs: 5, toTs: 15 }, samples: 3, labelField: null, fraudIds: null });
    expect(stats.counts).toEqual({ both: 1, onlyNew: 0, onlyOld: 0, newTotal: 1, oldTotal: 1 });
  });

  it("scores precision over labelled alerts and recall over the input's fraud ids", () => {
    const fresh = [alert("a", 0, true), alert("b", 1, false), alert("c", 2)];
    const old = [alert("a", 0, true)];
    const stats = compareAlerts(fresh, old, { idField: "txId", range: none, samples: 0, labelField: "isFraud", fraudIds: new Set(["a", "z", "y", "x"]) });
    expect(stats.scores).toEqual({
      labelField: "isFraud",
      source: "field",
      fraudInInput: 4,
      new: { labelled: 2, truePositives: 1, precision: 0.5, recall: 0.25 },
      old: { labelled: 1, truePositives: 1, precision: 1, recall: 0.25 },
    });
    // Without the input read, recall is unknown rather than guessed.
    expect(compareAlerts(fresh, old, { idField: "txId", range: none, samples: 0, labelField: "isFraud", fraudIds: null }).scores?.new.recall).toBeNull();
  });

  it("scores against a chargeback topic's ids: every alert is judged, the records' own labels are ignored", () => {
    // "b" carries isFraud false but was charged back: the chargebacks decide.
    const fresh = [alert("a", 0, true), alert("b", 1, false), alert("c", 2)];
    const old = [alert("c", 2)];
    const chargebacks = new Set(["a", "b", "q"]);
    const stats = compareAlerts(fresh, old, { idField: "txId", range: none, samples: 0, labelField: "chargebacks:cb", fraudIds: chargebacks, chargebackIds: chargebacks });
    expect(stats.scores).toEqual({
      labelField: "chargebacks:cb",
      source: "chargebacks",
      fraudInInput: 3,
      new: { labelled: 3, truePositives: 2, precision: 2 / 3, recall: 2 / 3 },
      old: { labelled: 1, truePositives: 0, precision: 0, recall: 0 },
    });
  });

  it("leaves out alerts on records outside the compared range (a backtest's input), and counts them", () => {
    const stats = compareAlerts([alert("a", 0), alert("b", 1)], [alert("a", 0), alert("z", 5), alert("y", 6)], { idField: "txId", range: none, samples: 0, labelField: null, fraudIds: null, scopeIds: new Set(["a", "b"]) });
    expect(stats.counts).toEqual({ both: 1, onlyNew: 1, onlyOld: 0, newTotal: 2, oldTotal: 1 });
    expect(stats.outOfScope).toEqual({ new: 0, old: 2 });
  });
});

describe("alert ids, labels and parsing", () => {
  it("uses the event's id, else the evidence's last id, else key@ts", () => {
    expect(alertRecordId(alert("t1", 7), "txId")).toBe("t1");
    expect(alertRecordId(alert(null, 7), "txId")).toBe("earlier");
    expect(alertRecordId({ key: "k", timestamp: 9, value: { ts: 8 } }, "txId")).toBe("k@8");
  });

  it("reads labels as fraud, not fraud or unlabelled", () => {
    expect(alertLabel(alert("a", 0, true), "isFraud")).toBe(true);
    expect(alertLabel({ value: { event: { isFraud: "false" } } }, "isFraud")).toBe(false);
    expect(alertLabel({ value: { event: { isFraud: "maybe" } } }, "isFraud")).toBeNull();
  });

  it("names what is wrong with a message that is not an alert", () => {
    expect(parseAlert("nope")).toEqual({ ok: false, reason: "the value is not JSON: nope" });
    expect(parseAlert("[1]")).toEqual({ ok: false, reason: "the value is not a JSON object" });
    expect(parseAlert(null)).toEqual({ ok: false, reason: "the message has no value" });
  });
});
