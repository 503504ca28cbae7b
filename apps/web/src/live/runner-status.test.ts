import { describe, expect, it } from "vitest";
import { clockTime, shownJobStatus, unreachableText } from "./runner-status";

const since = "2026-12-08T00:31:05.000Z";

describe("a job's status as the UI shows it", () => {
  it("says the runner is unreachable since when, never the stale status", () => {
    expect(shownJobStatus({ reachable: false, since }, "running", false)).toEqual({ text: `runner unreachable since ${clockTime(since)}`, kind: "unreachable", stale: true });
    expect(shownJobStatus({ reachable: false, since }, "running", true).text).not.toContain("running");
    expect(clockTime(since)).toMatch(/^\d\d:\d\d:\d\d$/);
  });

  it("does not repeat a status whose fetch failed", () => {
    expect(shownJobStatus({ reachable: true, since }, "running", true)).toMatchObject({ kind: "unknown", stale: true });
  });

  it("shows the runner's word again once it answers", () => {
    expect(shownJobStatus({ reachable: true, since }, "running", false)).toEqual({ text: "running", kind: "running", stale: false });
    expect(unreachableText({ reachable: true, since })).toBeNull();
    expect(unreachableText(undefined)).toBeNull();
  });
});
