import { describe, expect, it } from "vitest";
import { auditHash, canonicalJson, type HashedAuditFields } from "./audit";

const event: HashedAuditFields = {
  at: new Date("2026-12-02T10:00:00.123Z"),
  actor: "ada@bank.test",
  action: "edit",
  subjectType: "pipeline",
  subjectId: "p1",
  details: { diff: { changedNodes: [{ id: "big" }] }, pipelineId: "p1" },
  reason: null,
  prevHash: null,
};

describe("the audit hash", () => {
  it("does not depend on the key order of the details (JSONB picks its own)", () => {
    expect(auditHash({ ...event, details: { pipelineId: "p1", diff: { changedNodes: [{ id: "big" }] } } })).toBe(auditHash(event));
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: undefined }] })).toBe('{"a":[{"d":1}],"b":1}');
  });

  it("changes with every covered field, the previous hash included", () => {
    const base = auditHash(event);
    const variants: Partial<HashedAuditFields>[] = [
      { at: new Date("2026-12-02T10:00:00.124Z") },
      { actor: "eve@bank.test" },
      { action: "save_version" },
      { subjectType: "version" },
      { subjectId: "p2" },
      { details: { pipelineId: "p1" } },
      { reason: "because" },
      { prevHash: "0".repeat(64) },
    ];
    for (const variant of variants) expect({ variant, same: auditHash({ ...event, ...variant }) === base }).toEqual({ variant, same: false });
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });
});
