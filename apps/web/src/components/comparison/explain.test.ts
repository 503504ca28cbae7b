import { describe, expect, it } from "vitest";
import { explainAlert } from "./explain";

describe("explainAlert", () => {
  it("reads a velocity alert's evidence: the records counted in its window, with the total", () => {
    const alert = {
      key: "c1",
      ts: 1_000,
      count: 3,
      event: { txId: "t3", cardId: "c1", ts: 1_000 },
      evidence: { records: [{ id: "t1", ts: 400 }, { id: "t2", ts: 700 }, { ts: 1_000 }], total: 61 },
    };
    expect(explainAlert(alert, "txId")).toEqual({
      id: "t3",
      ts: 1_000,
      kind: null,
      evidence: { records: [{ id: "t1", ts: 400 }, { id: "t2", ts: 700 }, { id: null, ts: 1_000 }], total: 61 },
      references: [],
    });
  });

  it("finds the reference data an enrichment used and the version valid at the event time", () => {
    const alert = { type: "THRESHOLD_EXCEEDED", ts: 5, event: { txId: 9, merchant: { id: "m1", category: "gambling" }, merchantVersion: 3, tier: null, tierVersion: null } };
    expect(explainAlert(alert, "txId")).toMatchObject({
      id: "9",
      kind: "THRESHOLD_EXCEEDED",
      evidence: null,
      references: [
        { field: "merchant", value: { id: "m1", category: "gambling" }, validFrom: 3 },
        { field: "tier", value: null, validFrom: null },
      ],
    });
  });

  it("takes a record without an event wrapper as it is, and ignores fields that only look like versions", () => {
    expect(explainAlert({ txId: "a", ts: 2, schemaVersion: 4, evidence: "n/a" }, "txId")).toEqual({ id: "a", ts: 2, kind: null, evidence: null, references: [] });
  });
});
