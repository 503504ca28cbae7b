// `keyflow audit verify` against an attacker with full access to the REAL PostgreSQL server
// (DATABASE_URL, the owner): they switch the append-only trigger off, change who approved a
// promotion, delete an event and recompute the whole hash chain. The chain alone then holds; the
// anchor (a MAC per event under a key the database never sees) does not, and verify names the first
// event that no longer matches it. Cutting the trail's end is found through its head, appended to a
// file outside the database. Each case runs in a throw-away schema, dropped afterwards.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendAuditEvent, auditHash, createDb, migrate, parseDatabaseUrl, verifyAuditChain, type Db } from "@keyflow/db";
import { auditCommand } from "./verify";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("verify.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");

function scratchUrl(): string {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  url.searchParams.set("schema", `kf_audit_attack_${process.pid}_${Date.now().toString(36)}`);
  return url.toString();
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

/** The owner's rewrite: triggers off, the row edits, the chain recomputed in id order, triggers on. */
async function rewrite(db: Db, edit: string[]): Promise<void> {
  if (db.driver.kind !== "postgres") throw new Error("expected PostgreSQL");
  const client = await db.driver.pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete");
    for (const sql of edit) await client.query(sql);
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } }); // committed rows; edits below are ours
    const live = (await client.query<{ id: string; actor: string }>("SELECT id::text, actor FROM audit_events ORDER BY id")).rows;
    let prevHash: string | null = null;
    for (const { id, actor } of live) {
      const row = rows.find((r) => String(r.id) === id);
      if (!row) throw new Error(`row ${id} vanished`);
      const hash = auditHash({ ...row, actor, prevHash });
      await client.query("UPDATE audit_events SET prev_hash = $1, hash = $2 WHERE id = $3", [prevHash, hash, id]);
      prevHash = hash;
    }
    await client.query("ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete");
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

const EVENTS = [
  { actor: "ana@bank.test", action: "save_version", subjectType: "version", subjectId: "v2" },
  { actor: "ana@bank.test", action: "request", subjectType: "promotion", subjectId: "pr1" },
  { actor: "x@bank.test", action: "approve", subjectType: "promotion", subjectId: "pr1", reason: "shadow results reviewed" },
  { actor: "x@bank.test", action: "deploy", subjectType: "deployment", subjectId: "d1" },
  { actor: "x@bank.test", action: "promote", subjectType: "pipeline", subjectId: "p1" },
  { actor: "x@bank.test", action: "logout", subjectType: "session", subjectId: "s1" },
] as const;

describe("keyflow audit verify against the database's owner (PostgreSQL)", () => {
  const opened: Db[] = [];
  const saved = { key: process.env.KEYFLOW_AUDIT_KEY, anchorFile: process.env.KEYFLOW_AUDIT_ANCHOR_FILE };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-audit-anchor-"));

  beforeAll(() => {
    process.env.KEYFLOW_AUDIT_KEY = randomBytes(32).toString("hex");
    process.env.KEYFLOW_AUDIT_ANCHOR_FILE = path.join(dir, "audit-anchor.jsonl");
  });

  afterAll(async () => {
    for (const [name, value] of [["KEYFLOW_AUDIT_KEY", saved.key], ["KEYFLOW_AUDIT_ANCHOR_FILE", saved.anchorFile]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    for (const db of opened) {
      if (db.driver.kind === "postgres") await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${db.driver.schema}" CASCADE`).catch(() => undefined);
      await db.close();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh schema holding the six events above, written by the app. */
  async function trail(): Promise<{ db: Db; databaseUrl: string }> {
    const databaseUrl = scratchUrl();
    const db = createDb({ databaseUrl });
    opened.push(db);
    await migrate(db);
    for (const event of EVENTS) await appendAuditEvent(db.prisma, event);
    return { db, databaseUrl };
  }

  it("passes the untouched trail", async () => {
    const { db, databaseUrl } = await trail();
    const last = await db.prisma.auditEvent.findFirstOrThrow({ orderBy: { id: "desc" } });
    const c = capture();
    expect(await auditCommand(["verify", "--database-url", databaseUrl], c.io)).toBe(0);
    expect(c.out[0]).toMatch(/^audit trail intact: 6 events/);
    expect(c.out[1]).toBe("anchor holds: 6 events checked against the audit key from KEYFLOW_AUDIT_KEY");
    expect(c.out[2]).toBe(`head anchored in ${process.env.KEYFLOW_AUDIT_ANCHOR_FILE} up to event ${last.id}`);
  });

  it("names the approval when the MACs were stripped as well, through the anchored heads (exit 1)", async () => {
    const { db, databaseUrl } = await trail();
    const approve = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "approve" } });
    await rewrite(db, [`UPDATE audit_events SET mac = NULL`, `UPDATE audit_events SET actor = 'ana@bank.test' WHERE id = ${approve.id}`]);
    const c = capture();
    expect(await auditCommand(["verify", "--database-url", databaseUrl], c.io)).toBe(1);
    expect(c.err[0]).toBe(
      `audit trail BROKEN at event ${approve.id} (approve by ana@bank.test): does not match the anchor: its hash was recomputed after it was anchored`,
    );
  });

  it("names the approval whose actor was changed after the chain was recomputed (exit 1)", async () => {
    const { db, databaseUrl } = await trail();
    const approve = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "approve" } });
    const deploy = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "deploy" } });
    await rewrite(db, [
      `UPDATE audit_events SET actor = 'ana@bank.test' WHERE id = ${approve.id}`,
      `DELETE FROM audit_events WHERE id = ${deploy.id}`,
    ]);
    // The attack is real: the hash chain alone holds again.
    const chain = await verifyAuditChain(db.prisma);
    expect(chain).toMatchObject({ ok: true, count: 5 });

    const c = capture();
    const code = await auditCommand(["verify", "--database-url", databaseUrl], c.io);
    expect({ code, out: c.out }).toEqual({ code: 1, out: [] });
    expect(c.err[0]).toBe(
      `audit trail BROKEN at event ${approve.id} (approve by ana@bank.test): does not match the anchor: its hash was recomputed after it was anchored`,
    );
  });

  it("names the approval deleted from the end of the trail, through the head anchored outside the database (exit 1)", async () => {
    const { db, databaseUrl } = await trail();
    const approve = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "approve" } });
    const before = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "request" } });
    // Cutting the tail needs no recomputation: what is left is a valid chain with valid MACs.
    await rewrite(db, [`DELETE FROM audit_events WHERE id >= ${approve.id}`]);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ ok: true, count: 2 });

    const c = capture();
    const code = await auditCommand(["verify", "--database-url", databaseUrl], c.io);
    expect({ code, out: c.out }).toEqual({ code: 1, out: [] });
    expect(c.err[0]).toBe(
      `audit trail BROKEN at event ${approve.id} (approve by x@bank.test): it was anchored but is missing from the database ` +
        `(the trail now ends at event ${before.id}): deleted after it was anchored`,
    );
  });
});
