import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { appendAuditEvent, createDb, migrate } from "@keyflow/db";
import { auditCommand } from "./verify";

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe("keyflow audit", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-audit-verify-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("explains its usage on a missing or unknown subcommand (exit 2)", async () => {
    for (const args of [[], ["check"], ["verify", "extra"], ["verify", "--nope"]]) {
      const c = capture();
      expect(await auditCommand(args, c.io)).toBe(2);
      expect(c.err.join("\n")).toContain("usage: keyflow audit verify");
    }
  });

  it("verifies the chain of an embedded database (--data-dir)", async () => {
    const db = createDb({ dataDir: dir });
    await migrate(db);
    await appendAuditEvent(db.prisma, { actor: "ada@bank.test", action: "login", subjectType: "user", subjectId: "u1" });
    await appendAuditEvent(db.prisma, { actor: "ada@bank.test", action: "edit", subjectType: "pipeline", subjectId: "p1", details: { diff: { addedNodes: ["a"] } } });
    await db.close();
    const c = capture();
    expect(await auditCommand(["verify", "--data-dir", dir], c.io)).toBe(0);
    expect(c.out[0]).toMatch(/^audit trail intact: 2 events, last hash [0-9a-f]{64}$/);
  }, 60_000);
});
