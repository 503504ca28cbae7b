// The app's database role against the REAL PostgreSQL server (DATABASE_URL, a superuser that owns
// and migrates): the app connects as a login member of `keyflow_app` (the role the migrations
// create) and may append to the audit trail but never change it, switch its triggers off or alter
// the table. Runs in a throw-away schema and with a throw-away login role, both dropped afterwards.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendAuditEvent, auditTrailExposure, createDb, migrate, migrateAsOwner, parseDatabaseUrl, type Db } from "./index";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("audit-roles.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");

const tag = `${process.pid}_${Date.now().toString(36)}`;
const schema = `kf_roles_${tag}`;
const login = `kf_app_login_${tag}`;
const password = randomBytes(12).toString("hex");

function urlAs(user?: { name: string; password: string }): string {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  url.searchParams.set("schema", schema);
  return url.toString();
}

async function refused(db: Db, sql: string): Promise<string> {
  const err = await db.prisma.$executeRawUnsafe(sql).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `expected "${sql}" to be refused to the app role`).toBeInstanceOf(Error);
  return String((err as Error).message);
}

describe("the app role cannot rewrite the audit trail (PostgreSQL)", () => {
  let owner: Db;
  let app: Db;

  beforeAll(async () => {
    owner = createDb({ databaseUrl: urlAs() });
    await migrate(owner);
    if (owner.driver.kind !== "postgres") throw new Error("expected PostgreSQL");
    // What a DBA does once per environment (README "The app's database role").
    await owner.driver.pool.query(`CREATE ROLE "${login}" LOGIN PASSWORD '${password}' IN ROLE keyflow_app`);
    app = createDb({ databaseUrl: urlAs({ name: login, password }), pool: { max: 2 } });
    await appendAuditEvent(owner.prisma, { actor: "ada@bank.test", action: "approve", subjectType: "promotion", subjectId: "pr1" });
  });

  afterAll(async () => {
    await app?.close().catch(() => undefined);
    if (owner?.driver.kind === "postgres") {
      await owner.driver.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
      await owner.driver.pool.query(`DROP ROLE IF EXISTS "${login}"`).catch(() => undefined);
    }
    await owner?.close().catch(() => undefined);
  });

  it("is not the owner of audit_events, nor a member of its owner (the owner is warned about at start)", async () => {
    const rows = await app.prisma.$queryRawUnsafe<{ me: string; owner: string }[]>(
      `SELECT current_user::text AS me, tableowner::text AS owner FROM pg_tables WHERE tablename = 'audit_events' AND schemaname = current_schema()`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]?.me).toBe(login);
    expect(rows[0]?.owner).not.toBe(login);
    expect(await auditTrailExposure(app)).toBeNull();
    expect(await auditTrailExposure(owner)).toMatch(/can switch the audit trail's triggers off/);
  });

  it("starts on a database its owner has migrated: migrate() finds nothing to do and changes nothing", async () => {
    const result = await migrate(app);
    expect(result.applied).toEqual([]);
    expect(result.alreadyApplied.length).toBeGreaterThan(0);
  });

  it("migrates a new schema through KEYFLOW_MIGRATE_DATABASE_URL while connected as the app role (migrateAsOwner)", async () => {
    const fresh = `${schema}_b`;
    const as = (url: string) => {
      const u = new URL(url);
      u.searchParams.set("schema", fresh);
      return u.toString();
    };
    const saved = process.env.KEYFLOW_MIGRATE_DATABASE_URL;
    const appB = createDb({ databaseUrl: as(urlAs({ name: login, password })), pool: { max: 1 } });
    try {
      await expect(migrate(appB)).rejects.toThrow(/permission denied/);
      process.env.KEYFLOW_MIGRATE_DATABASE_URL = as(urlAs());
      expect((await migrateAsOwner(appB)).applied.length).toBeGreaterThan(0);
      await appendAuditEvent(appB.prisma, { actor: "ada@bank.test", action: "login", subjectType: "user", subjectId: "u1" });
      expect(await refused(appB, `TRUNCATE audit_events`)).toMatch(/permission denied for table audit_events/);
    } finally {
      if (saved === undefined) delete process.env.KEYFLOW_MIGRATE_DATABASE_URL;
      else process.env.KEYFLOW_MIGRATE_DATABASE_URL = saved;
      await appB.close();
      if (owner.driver.kind === "postgres") await owner.driver.pool.query(`DROP SCHEMA IF EXISTS "${fresh}" CASCADE`);
    }
  });

  it("appends to the audit trail and uses the other tables as the app does", async () => {
    const event = await appendAuditEvent(app.prisma, { actor: "bob@bank.test", action: "request", subjectType: "promotion", subjectId: "pr1" });
    expect(event.prevHash).not.toBeNull();
    expect(await app.prisma.auditEvent.count()).toBe(2);
    const pipeline = await app.prisma.pipeline.create({ data: { name: `roles-${tag}`, draft: {} } });
    await app.prisma.pipeline.update({ where: { id: pipeline.id }, data: { description: "changed" } });
    await app.prisma.pipeline.delete({ where: { id: pipeline.id } });
  });

  it("is refused DISABLE TRIGGER, DROP TRIGGER, ALTER TABLE, UPDATE, DELETE and TRUNCATE on audit_events", async () => {
    expect(await refused(app, `ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete`)).toMatch(/must be owner of table audit_events/);
    expect(await refused(app, `ALTER TABLE audit_events DISABLE TRIGGER ALL`)).toMatch(/must be owner of table audit_events/);
    expect(await refused(app, `DROP TRIGGER audit_events_no_truncate ON audit_events`)).toMatch(/must be owner of (table|relation) audit_events/);
    expect(await refused(app, `ALTER TABLE audit_events OWNER TO "${login}"`)).toMatch(/must be owner of table audit_events/);
    expect(await refused(app, `UPDATE audit_events SET actor = 'mallory@bank.test'`)).toMatch(/permission denied for table audit_events/);
    expect(await refused(app, `DELETE FROM audit_events`)).toMatch(/permission denied for table audit_events/);
    expect(await refused(app, `TRUNCATE audit_events`)).toMatch(/permission denied for table audit_events/);
    // Triggers off for the session (replication mode) needs a superuser.
    expect(await refused(app, `SET session_replication_role = replica`)).toMatch(/permission denied to set parameter/);
    const rows = await owner.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
    expect(rows.map((r) => r.actor)).toEqual(["ada@bank.test", "bob@bank.test"]);
  });

  it("cannot change the _prisma_migrations record or create objects in the schema", async () => {
    expect(await refused(app, `DELETE FROM "_prisma_migrations"`)).toMatch(/permission denied/);
    expect(await refused(app, `CREATE TABLE audit_events_copy (id int)`)).toMatch(/permission denied for schema/);
  });
});
