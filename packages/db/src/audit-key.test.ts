import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveAuditKey } from "./audit-key";

describe("the audit key", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-audit-key-"));
  const saved = process.env.KEYFLOW_AUDIT_KEY;
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.KEYFLOW_AUDIT_KEY;
    else process.env.KEYFLOW_AUDIT_KEY = saved;
  });

  it("is created once, readable by its owner only, and read back the same by every caller", () => {
    delete process.env.KEYFLOW_AUDIT_KEY;
    const keyFile = path.join(dir, "state", "audit.key");
    expect(resolveAuditKey({ keyFile })).toBeUndefined(); // verify never creates one
    const keys = Array.from({ length: 5 }, () => resolveAuditKey({ keyFile, create: true }));
    expect(new Set(keys.map((k) => k?.key.toString("hex"))).size).toBe(1);
    expect(keys[0]?.source).toBe(keyFile);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(keyFile))).toEqual(["audit.key"]);
  });

  it("prefers KEYFLOW_AUDIT_KEY and refuses a short one", () => {
    process.env.KEYFLOW_AUDIT_KEY = "k".repeat(40);
    expect(resolveAuditKey({ keyFile: path.join(dir, "unused.key"), create: true })?.source).toBe("KEYFLOW_AUDIT_KEY");
    expect(fs.existsSync(path.join(dir, "unused.key"))).toBe(false);
    process.env.KEYFLOW_AUDIT_KEY = "short";
    expect(() => resolveAuditKey()).toThrow(/too short \(5 characters; at least 32\)/);
  });
});
