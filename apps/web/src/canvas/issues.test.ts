import { describe, expect, it } from "vitest";
import { validatePipeline, type Issue } from "@keyflow/operators";
import { describeCounts, issueCounts, issuesByNode, sortIssues } from "./issues";

const issues: Issue[] = [
  { severity: "warning", code: "late-data-dropped", nodeId: "vel", message: "w1" },
  { severity: "error", code: "bad-param", nodeId: "vel", param: "count", message: "e1" },
  { severity: "error", code: "no-sink", message: "e2" },
  { severity: "warning", code: "hot-key", nodeId: "byCard", message: "w2" },
];

describe("issuesByNode", () => {
  it("counts and lists each node's issues, errors first, and skips graph-wide ones", () => {
    const byNode = issuesByNode(issues);
    expect([...byNode.keys()].sort()).toEqual(["byCard", "vel"]);
    expect(byNode.get("vel")).toEqual({ errors: 1, warnings: 1, messages: ["e1", "w1"] });
    expect(byNode.get("byCard")).toEqual({ errors: 0, warnings: 1, messages: ["w2"] });
  });

  it("works on what the shared validator reports", () => {
    const result = validatePipeline({ format: "keyflow.pipeline/v1", name: "p", nodes: [{ id: "f", type: "filter", params: { expression: "amount >" } }], edges: [] });
    expect(result.ok).toBe(false);
    expect(issuesByNode(result.issues).get("f")?.errors).toBeGreaterThan(0);
  });
});

describe("sortIssues / counts", () => {
  it("puts errors first and keeps the validator's order within a severity", () => {
    expect(sortIssues(issues).map((i) => i.message)).toEqual(["e1", "e2", "w1", "w2"]);
  });

  it("describes the counts in words", () => {
    expect(describeCounts(issueCounts(issues))).toBe("2 errors, 2 warnings");
    expect(describeCounts({ errors: 1, warnings: 0 })).toBe("1 error");
    expect(describeCounts({ errors: 0, warnings: 0 })).toBe("No problems");
  });
});
