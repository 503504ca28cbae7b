// @vitest-environment happy-dom
// The approver's bundle pieces: the state check says compatible / incompatible (with the runner's
// problems, which name the version's nodes) / no rule job / not checkable, and the choice for the
// version that stops enforcing reports shadow or stopped.
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { AfterEnforcingChoice, StateCheck, type StateCheckResult } from "./PromotionControls";

afterEach(cleanup);

const base: StateCheckResult = { ruleJobId: "rule-abc", checkpoint: "/data/checkpoints/rule-abc/chk-12", compatible: true, problems: [], dropped: [], note: null };

describe("StateCheck", () => {
  it("shows a compatible version with the rule job and the checkpoint it was checked against", () => {
    render(<StateCheck version={2} check={base} error={null} />);
    const el = screen.getByTestId("promotion-compat");
    expect(el.getAttribute("data-compatible")).toBe("yes");
    expect(el.textContent).toBe("State check of v2: compatible with rule job rule-abc, checkpoint chk-12");
  });

  it("lists the runner's problems, naming the version's node, when the state does not fit", () => {
    const problem = 'version 2, node "velocity" (velocity): params "windowMs" changed since the checkpoint, and the stored state is laid out by it; give the node another id to start it empty';
    render(<StateCheck version={2} check={{ ...base, compatible: false, problems: [problem] }} error={null} />);
    const el = screen.getByTestId("promotion-compat");
    expect(el.getAttribute("data-compatible")).toBe("no");
    expect(el.getAttribute("role")).toBe("alert");
    expect(el.textContent).toContain("incompatible with rule job rule-abc, checkpoint chk-12; it cannot be approved");
    expect(el.textContent).toContain(problem);
  });

  it("names the state that would be dropped", () => {
    render(<StateCheck version={3} check={{ ...base, dropped: ["v1-velocity"] }} error={null} />);
    expect(screen.getByTestId("promotion-compat").textContent).toContain("the state of v1-velocity would be dropped");
  });

  it("says the version starts empty when no rule job runs", () => {
    render(<StateCheck version={1} check={{ ...base, ruleJobId: null, checkpoint: null, note: "no rule job of this rule is running: the version would start with empty state" }} error={null} />);
    const el = screen.getByTestId("promotion-compat");
    expect(el.getAttribute("data-compatible")).toBe("yes");
    expect(el.textContent).toBe("State check of v1: no rule job of this rule is running: the version would start with empty state");
  });

  it("says so when the check could not be made, and while it runs", () => {
    render(<StateCheck version={2} check={undefined} error="the runner did not answer" />);
    expect(screen.getByTestId("promotion-compat").getAttribute("data-compatible")).toBe("unknown");
    expect(screen.getByTestId("promotion-compat").textContent).toContain("the runner did not answer");
    cleanup();
    render(<StateCheck version={2} check={undefined} error={null} />);
    expect(screen.getByTestId("promotion-compat").getAttribute("data-compatible")).toBe("pending");
  });
});

describe("AfterEnforcingChoice", () => {
  it("offers shadow (the default) and stop, and reports the choice", () => {
    const onChange = vi.fn();
    render(<AfterEnforcingChoice who="v1" value="shadow" onChange={onChange} testId="promotion-previous" />);
    const select = screen.getByTestId("promotion-previous");
    if (!(select instanceof HTMLSelectElement)) throw new Error("not a select");
    expect(select.value).toBe("shadow");
    expect([...select.options].map((o) => `${o.value}:${o.textContent}`)).toEqual(["shadow:drops back to shadow", "stopped:stops"]);
    expect(screen.getByLabelText("what v1 becomes")).toBe(select);
    fireEvent.change(select, { target: { value: "stopped" } });
    expect(onChange).toHaveBeenCalledWith("stopped");
  });
});
