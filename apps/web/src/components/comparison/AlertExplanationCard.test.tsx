// @vitest-environment happy-dom
// An alert opened to its explanation: the records that made it fire, the reference valid at its
// event time, and the parameters of the version that raised it.
import { afterEach, describe, expect, it } from "vitest";
import { cleanup, render, screen } from "@testing-library/react";
import { AlertExplanationCard } from "./AlertExplanationCard";

afterEach(cleanup);

describe("AlertExplanationCard", () => {
  it("shows the evidence, the reference and the version's parameters", () => {
    const alert = {
      key: "c1",
      ts: Date.UTC(2026, 11, 2, 10),
      count: 2,
      event: { txId: "t2", merchant: { category: "gambling" }, merchantVersion: Date.UTC(2026, 11, 1) },
      evidence: { records: [{ id: "t1", ts: Date.UTC(2026, 11, 2, 9, 59) }, { id: "t2", ts: Date.UTC(2026, 11, 2, 10) }], total: 7 },
    };
    render(<AlertExplanationCard alert={alert} idField="txId" side="v4 shadow" parameters={[{ nodeId: "velocity", type: "velocity", params: { threshold: 2, windowMs: 60_000 } }]} />);
    const card = screen.getByTestId("alert-explanation");
    expect(card.querySelector("summary")?.textContent).toBe("t2 at 2026-12-02 10:00:00.000 · 7 records in its evidence");
    const evidence = screen.getByTestId("alert-evidence");
    expect(evidence.querySelector("caption")?.textContent).toBe("Records that made it fire (the last 2 of 7)");
    expect([...evidence.querySelectorAll("tbody tr")].map((tr) => tr.textContent)).toEqual(["t12026-12-02 09:59:00.000", "t22026-12-02 10:00:00.000"]);
    expect(screen.getByTestId("alert-reference").textContent).toContain("Reference merchant valid from 2026-12-01 00:00:00.000");
    expect(screen.getByTestId("alert-parameters").textContent).toBe('Parameters of v4 shadow:velocity (velocity) {"threshold":2,"windowMs":60000}');
  });
});
