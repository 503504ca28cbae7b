// @keyflow/db against a REAL PostgreSQL server: env DATABASE_URL (e.g. from `scripts/services/start.sh postgres`).
// Each suite works in its own throw-away schema (?schema=kf_test_…), dropped afterwards.
import { afterAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, type Db } from "./index";
import { readMigrations } from "./migrate";
import { defineDbSuite } from "./db.suite";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) {
  // Fail, never skip: the integration project exists to run against a real server.
  throw new Error(
    "db.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server. Start one with " +
      "`scripts/services/start.sh postgres` and export the DATABASE_URL=… line it prints.",
  );
}
const baseUrl: string = DATABASE_URL;

let counter = 0;
function scratchUrl(): string {
  const { connectionString } = parseDatabaseUrl(baseUrl);
  const url = new URL(connectionString);
  url.searchParams.set("schema", `kf_test_${process.pid}_${Date.now().toString(36)}_${counter++}`);
  return url.toString();
}

async function dropAndClose(db: Db): Promise<void> {
  if (db.driver.kind === "postgres" && db.driver.schema) {
    await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${db.driver.schema}" CASCADE`);
  }
  await db.close();
}

defineDbSuite("PostgreSQL (DATABASE_URL)", {
  open: () => {
    const db = createDb({ databaseUrl: scratchUrl() });
    expect(db.kind).toBe("postgres");
    return db;
  },
  dispose: dropAndClose,
});

describe("@keyflow/db on PostgreSQL only", () => {
  const opened: Db[] = [];
  afterAll(async () => {
    for (const db of opened) await dropAndClose(db).catch(() => undefined);
  });

  it("lets concurrent migrators apply each migration exactly once (advisory lock)", async () => {
    const url = scratchUrl();
    const dbs = [createDb({ databaseUrl: url }), createDb({ databaseUrl: url }), createDb({ databaseUrl: url })];
    opened.push(...dbs);
    const results = await Promise.all(dbs.map((db) => migrate(db)));
    const names = readMigrations().map((m) => m.name);
    expect(results.flatMap((r) => r.applied).sort()).toEqual(names);
    const rows = await dbs[0]!.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM "_prisma_migrations"`);
    expect(rows[0]?.n).toBe(names.length);
  });

  it("keeps DateTime exact even when the server's default TimeZone is not UTC", async () => {
    const db = createDb({ databaseUrl: scratchUrl(), pool: { options: "-c TimeZone=America/New_York" } });
    opened.push(db);
    await migrate(db);
    const at = new Date("2026-07-01T12:00:00.000Z");
    const p = await db.prisma.pipeline.create({ data: { name: "tz", draft: {}, createdAt: at } });
    const rows = await db.prisma.$queryRawUnsafe<{ t: string }[]>(
      `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t FROM pipelines WHERE id = $1`,
      p.id,
    );
    expect(rows[0]?.t).toBe(at.toISOString());
  });
});
