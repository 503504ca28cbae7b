import { describe, expect, it } from "vitest";
import { COALESCE_MS, initHistory, record, redo, replacePresent, undo } from "./history";

describe("history", () => {
  it("undoes and redoes in order, and a new edit drops the redo branch", () => {
    let h = initHistory("a");
    h = record(h, "b", { now: 0 });
    h = record(h, "c", { now: 10_000 });
    expect(h.present).toBe("c");
    h = undo(h);
    expect(h.present).toBe("b");
    h = undo(h);
    expect(h.present).toBe("a");
    expect(undo(h)).toBe(h);
    h = redo(h);
    expect(h.present).toBe("b");
    h = record(h, "d", { now: 20_000 });
    expect(h.future).toEqual([]);
    expect(redo(h)).toBe(h);
    expect(h.past).toEqual(["a", "b"]);
  });

  it("ignores an edit that returns the present itself", () => {
    const h = record(initHistory("a"), "b", { now: 0 });
    expect(record(h, h.present, { now: 1 })).toBe(h);
  });

  it("coalesces edits of one group within the window into one step", () => {
    let h = initHistory("");
    h = record(h, "1", { now: 0, group: "param:vel:threshold" });
    h = record(h, "10", { now: 300, group: "param:vel:threshold" });
    h = record(h, "100", { now: 300 + COALESCE_MS, group: "param:vel:threshold" });
    expect(h.past).toEqual([""]);
    h = record(h, "1000", { now: 400 + 3 * COALESCE_MS, group: "param:vel:threshold" });
    expect(h.past).toEqual(["", "100"]);
    h = record(h, "x", { now: 401 + 3 * COALESCE_MS, group: "param:vel:windowMs" });
    expect(h.past).toEqual(["", "100", "1000"]);
    expect(undo(undo(h)).present).toBe("100");
  });

  it("does not coalesce into a step that was undone", () => {
    let h = record(initHistory("a"), "b", { now: 0, group: "g" });
    h = undo(h);
    h = record(h, "c", { now: 10, group: "g" });
    expect(h.past).toEqual(["a"]);
    expect(h.present).toBe("c");
  });

  it("keeps at most `limit` steps", () => {
    let h = initHistory(0);
    for (let i = 1; i <= 10; i++) h = record(h, i, { now: i * 10_000, limit: 3 });
    expect(h.past).toEqual([7, 8, 9]);
  });

  it("replaces the present without a step", () => {
    const h = replacePresent(record(initHistory("a"), "b", { now: 0 }), "B");
    expect(h).toMatchObject({ past: ["a"], present: "B" });
  });
});
