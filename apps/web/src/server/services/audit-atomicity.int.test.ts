// Edits and their audit records commit together, against a REAL PostgreSQL (DATABASE_URL): a
// trigger in the test's own schema refuses every audit row of one person, and each edit that person
// tries through the tRPC procedures (create, autosave, save version, import, start a backtest)
// fails and leaves nothing behind, while the same edits by someone else go through with their record.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, verifyAuditChain, type Db } from "@keyflow/db";
import { PIPELINE_FORMAT, type PipelineDocumentInput } from "@keyflow/operators";
import { asUser } from "../auth/test-user";
import { createCaller } from "../root";
import { createContext } from "../trpc";
import { dropTestSchema } from "./runner-process.testing";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("audit-atomicity.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");
const BROKEN = "broken@bank.test";

function doc(name: string, threshold = 3): PipelineDocumentInput {
  return {
    format: PIPELINE_FORMAT,
    name,
    nodes: [
      { id: "payments", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
      { id: "byCard", type: "keyBy", params: { field: "cardId" } },
      { id: "velocity", type: "velocity", params: { threshold, windowMs: "10m", idField: "txId" } },
      { id: "alerts", type: "sink.kafka", params: { topic: "alerts" } },
    ],
    edges: [
      { from: "payments", to: "byCard" },
      { from: "byCard", to: "velocity" },
      { from: "velocity", to: "alerts" },
    ],
  };
}

let db: Db;
let ada: ReturnType<typeof createCaller>;
let broken: ReturnType<typeof createCaller>;
const caller = (email: string) => createCaller(createContext({ headers: new Headers() }, { ...asUser(email, "analyst"), db: async () => db, env: { runnerUrl: "http://127.0.0.1:9" } }));
const auditRows = () => db.prisma.auditEvent.count();

beforeAll(async () => {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  const schema = `kf_atomic_${process.pid}_${Date.now().toString(36)}`;
  url.searchParams.set("schema", schema);
  db = createDb({ databaseUrl: url.toString() });
  await migrate(db);
  // A real failure inside PostgreSQL, not a stub: the audit row of BROKEN is refused by a trigger.
  if (db.driver.kind !== "postgres") throw new Error("expected a PostgreSQL server");
  await db.driver.pool.query(`
    CREATE FUNCTION "${schema}".refuse_broken_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.actor = '${BROKEN}' THEN RAISE EXCEPTION 'audit append refused for %', NEW.actor; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER refuse_broken_audit BEFORE INSERT ON "${schema}".audit_events FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_broken_audit();
  `);
  ada = caller("ada@bank.test");
  broken = caller(BROKEN);
});

afterAll(async () => {
  await dropTestSchema(db);
});

describe("an edit and its audit record commit together", () => {
  let pipelineId = "";

  it("creating a pipeline: refused audit, no pipeline", async () => {
    const before = await auditRows();
    await expect(broken.pipeline.create({ name: "never-created", graph: doc("never-created") })).rejects.toThrow(/audit append refused for broken@bank.test/);
    expect(await db.prisma.pipeline.count({ where: { name: "never-created" } })).toBe(0);
    expect(await auditRows()).toBe(before);
    // The same call by someone whose record can be written goes through, with its record.
    pipelineId = (await ada.pipeline.create({ name: "card-velocity", graph: doc("card-velocity") })).id;
    expect(await db.prisma.auditEvent.count({ where: { action: "create", subjectId: pipelineId } })).toBe(1);
  });

  it("the autosave (an edit): refused audit, the draft as it was", async () => {
    const draftBefore = (await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft;
    await expect(broken.pipeline.saveDraft({ pipelineId, graph: doc("card-velocity", 7) })).rejects.toThrow(/audit append refused/);
    expect((await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft).toEqual(draftBefore);
    await ada.pipeline.saveDraft({ pipelineId, graph: doc("card-velocity", 5) });
    expect(await db.prisma.auditEvent.count({ where: { action: "edit", subjectId: pipelineId } })).toBe(1);
  });

  it("saving a version: refused audit, no version and the draft as it was", async () => {
    const draftBefore = (await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft;
    await expect(broken.pipeline.saveVersion({ pipelineId, graph: doc("card-velocity", 9), message: "nine" })).rejects.toThrow(/audit append refused/);
    expect(await db.prisma.pipelineVersion.count({ where: { pipelineId } })).toBe(0);
    expect((await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft).toEqual(draftBefore);
    const saved = await ada.pipeline.saveVersion({ pipelineId, graph: doc("card-velocity", 4), message: "four" });
    expect(saved.version.number).toBe(1);
    expect(await db.prisma.auditEvent.count({ where: { action: "save_version", subjectId: saved.version.id } })).toBe(1);
  });

  it("importing a file, as a new pipeline or into one: refused audit, nothing stored", async () => {
    const draftBefore = (await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft;
    await expect(broken.pipeline.importDraft({ graph: doc("imported") })).rejects.toThrow(/audit append refused/);
    expect(await db.prisma.pipeline.count({ where: { name: "imported" } })).toBe(0);
    await expect(broken.pipeline.importDraft({ graph: doc("whatever", 11), into: pipelineId })).rejects.toThrow(/audit append refused/);
    expect((await db.prisma.pipeline.findUniqueOrThrow({ where: { id: pipelineId } })).draft).toEqual(draftBefore);
  });

  it("starting a backtest: refused audit, no backtest and no deployment", async () => {
    const version = await db.prisma.pipelineVersion.findFirstOrThrow({ where: { pipelineId } });
    await expect(broken.backtests.start({ versionId: version.id, range: { kind: "kafka", from: { by: "earliest" }, to: { by: "latest" } } })).rejects.toThrow(/audit append refused/);
    expect(await db.prisma.backtest.count()).toBe(0);
    expect(await db.prisma.deployment.count()).toBe(0);
  });

  it("what was written is one unbroken chain", async () => {
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ ok: true, count: 3 });
  });
});
