// Applies the committed migrations (prisma/migrations/<name>/migration.sql) to PostgreSQL or PGlite.
//
// Why not `prisma migrate deploy`? Offline we can only run Prisma 6.19's WebAssembly schema engine,
// which reaches the database through a driver adapter. Through @prisma/adapter-pg it fails against a
// real server ("Column type 'name' could not be deserialized", prisma/prisma#27403), and from inside
// an app it would mean shelling out to the CLI. So we do what `migrate deploy` does, ourselves: run
// each pending migration.sql in name order, each in its own transaction, and record it in Prisma's own
// `_prisma_migrations` table with the same columns and values Prisma writes (checksum = sha256 hex of
// the file), so `prisma migrate status` / `migrate deploy` agree with us and can take over later.
// The real server is driven with `pg` directly (multi-statement scripts via the simple query
// protocol; session advisory lock 72707369, the key Prisma Migrate itself uses, so concurrent
// migrators — ours or Prisma's — wait for each other). PGlite runs scripts with its own exec().
//
// A migration must be able to run inside a transaction (no CREATE INDEX CONCURRENTLY, no VACUUM).
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { PGlite, Transaction as PGliteTransaction } from "@electric-sql/pglite";
import type pg from "pg";
import type { DbDriver } from "./index";
import { defaultMigrationsDir } from "./paths";

export interface MigrateOptions {
  /** Default: <repo>/prisma/migrations. */
  migrationsDir?: string;
  /** Called with one line per applied migration. */
  log?: (line: string) => void;
}

export interface MigrationInfo {
  name: string;
  /** sha256 (hex) of migration.sql, as Prisma computes it. */
  checksum: string;
  sql: string;
}

export interface MigrateResult {
  /** Applied by this call, in order. */
  applied: string[];
  /** Already applied before this call. */
  alreadyApplied: string[];
  /** Recorded in _prisma_migrations but absent from the migrations folder (e.g. a newer branch). */
  unknownInDatabase: string[];
}

export interface MigrationStatus {
  applied: string[];
  pending: string[];
  unknownInDatabase: string[];
  /** Applied, but migration.sql has changed since. */
  modified: string[];
  /** Started but never finished (a failed `prisma migrate deploy`), not rolled back. */
  failed: string[];
}

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly migrationName: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MigrationError";
  }
}

/** Prisma Migrate's advisory lock key (same value as the schema engine's). */
const PRISMA_ADVISORY_LOCK_KEY = 72707369;

/** The table exactly as Prisma's schema engine creates it. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

interface MigrationRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | string | null;
  rolled_back_at: Date | string | null;
  started_at: Date | string;
}

/** What migrate() needs from a database: a Db from createDb(), or just its driver. */
export interface MigrateTarget {
  driver: DbDriver;
}

interface Session {
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs fn in a transaction; `script` may hold many statements. */
  transaction(fn: (tx: { script(sql: string): Promise<void>; query(sql: string, params?: unknown[]): Promise<void> }) => Promise<void>): Promise<void>;
  release(): Promise<void>;
}

export function sha256Hex(text: string | Buffer): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The committed migrations, in the order Prisma applies them (folder name order). */
export function readMigrations(migrationsDir: string = defaultMigrationsDir()): MigrationInfo[] {
  if (!fs.existsSync(migrationsDir)) throw new Error(`@keyflow/db: migrations folder not found: ${migrationsDir}`);
  return fs
    .readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const file = path.join(migrationsDir, name, "migration.sql");
      if (!fs.existsSync(file)) throw new MigrationError(`Migration ${name} has no migration.sql (${file})`, name);
      const bytes = fs.readFileSync(file);
      return { name, checksum: sha256Hex(bytes), sql: bytes.toString("utf8") };
    });
}

/**
 * Prisma compares checksums of the file as is; a checkout with CRLF line endings (git autocrlf)
 * must not count as a modified migration, so both line-ending forms are accepted.
 */
function checksumMatches(migration: MigrationInfo, recorded: string): boolean {
  if (migration.checksum === recorded) return true;
  const lf = migration.sql.replace(/\r\n/g, "\n");
  return sha256Hex(lf) === recorded || sha256Hex(lf.replace(/\n/g, "\r\n")) === recorded;
}

async function openSession(driver: DbDriver): Promise<Session> {
  if (driver.kind === "postgres") return openPgSession(driver.pool, driver.schema);
  return openPgliteSession(driver.pglite);
}

async function openPgSession(pool: pg.Pool, schema: string | null): Promise<Session> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
    // After the lock: CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent twin. Only when
    // missing: the app's role (keyflow_app) may not create schemas, even existing ones.
    const exists = schema && (await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount;
    if (schema && !exists) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema.replace(/"/g, '""')}"`);
  } catch (err) {
    client.release(err as Error);
    throw err;
  }
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await client.query(sql, params)).rows as T[];
    },
    async transaction(fn) {
      await client.query("BEGIN");
      try {
        await fn({
          // No parameters → simple query protocol, which accepts several statements.
          script: async (sql) => void (await client.query(sql)),
          query: async (sql, params) => void (await client.query(sql, params)),
        });
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
    },
    async release() {
      try {
        await client.query("SELECT pg_advisory_unlock($1)", [PRISMA_ADVISORY_LOCK_KEY]);
        client.release();
      } catch (err) {
        client.release(err as Error); // drop the connection; the server frees its lock with it
      }
    },
  };
}

// PGlite is single-connection and in-process: serialize migrate() calls on one instance here.
const pgliteLocks = new WeakMap<PGlite, Promise<unknown>>();

async function openPgliteSession(pglite: PGlite): Promise<Session> {
  const previous = pgliteLocks.get(pglite) ?? Promise.resolve();
  let unlock!: () => void;
  const mine = new Promise<void>((resolve) => (unlock = resolve));
  pgliteLocks.set(pglite, previous.then(() => mine));
  await previous.catch(() => undefined);
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await pglite.query<T>(sql, params)).rows;
    },
    async transaction(fn) {
      await pglite.transaction(async (tx: PGliteTransaction) => {
        await fn({
          script: async (sql) => void (await tx.exec(sql)),
          query: async (sql, params) => void (await tx.query(sql, params)),
        });
      });
    },
    async release() {
      unlock();
    },
  };
}

async function readRecorded(session: Session): Promise<MigrationRow[]> {
  // Only when missing, so that the app's role (no CREATE on the schema) can check the migrations.
  const found = await session.query<{ t: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS t`);
  if (!found[0]?.t) await session.query(CREATE_MIGRATIONS_TABLE);
  return session.query<MigrationRow>(
    `SELECT migration_name, checksum, finished_at, rolled_back_at, started_at
       FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
  );
}

function compare(migrations: MigrationInfo[], rows: MigrationRow[]): MigrationStatus {
  const live = rows.filter((row) => row.rolled_back_at === null); // rolled back = not applied
  const done = new Map(live.filter((row) => row.finished_at !== null).map((row) => [row.migration_name, row]));
  const local = new Set(migrations.map((m) => m.name));
  return {
    applied: migrations.filter((m) => done.has(m.name)).map((m) => m.name),
    pending: migrations.filter((m) => !done.has(m.name)).map((m) => m.name),
    unknownInDatabase: [...done.keys()].filter((name) => !local.has(name)),
    modified: migrations.filter((m) => {
      const row = done.get(m.name);
      return row !== undefined && !checksumMatches(m, row.checksum);
    }).map((m) => m.name),
    failed: [...new Set(live.filter((row) => row.finished_at === null).map((row) => row.migration_name))],
  };
}

/** Which migrations are applied / pending, without changing anything but creating _prisma_migrations. */
export async function migrationStatus(target: MigrateTarget, options: MigrateOptions = {}): Promise<MigrationStatus> {
  const migrations = readMigrations(options.migrationsDir);
  const session = await openSession(target.driver);
  try {
    return compare(migrations, await readRecorded(session));
  } finally {
    await session.release();
  }
}

/**
 * Applies every pending migration, in order, each in its own transaction together with its
 * _prisma_migrations row. Idempotent. Throws MigrationError naming the migration when one fails
 * (it is rolled back: nothing of it is applied and nothing is recorded) or when an applied
 * migration's file has changed since.
 */
export async function migrate(target: MigrateTarget, options: MigrateOptions = {}): Promise<MigrateResult> {
  const migrations = readMigrations(options.migrationsDir);
  const session = await openSession(target.driver);
  try {
    const status = compare(migrations, await readRecorded(session));
    const firstFailed = status.failed[0];
    if (firstFailed !== undefined) {
      throw new MigrationError(
        `Migration ${firstFailed} is recorded in _prisma_migrations as started but not finished ` +
          "(a failed `prisma migrate deploy`?). Fix the database by hand, then delete that row or mark it " +
          "rolled back (UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = '…' AND finished_at IS NULL).",
        firstFailed,
      );
    }
    const firstModified = status.modified[0];
    if (firstModified !== undefined) {
      throw new MigrationError(
        `Migration ${firstModified} was modified after it was applied (checksum of ` +
          `prisma/migrations/${firstModified}/migration.sql differs from _prisma_migrations). ` +
          "Never edit an applied migration: revert the file and add a new migration instead.",
        firstModified,
      );
    }

    const pending = new Set(status.pending);
    const applied: string[] = [];
    for (const migration of migrations) {
      if (!pending.has(migration.name)) continue;
      try {
        await session.transaction(async (tx) => {
          const id = randomUUID();
          await tx.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
             VALUES ($1, $2, $3, clock_timestamp(), 0)`,
            [id, migration.checksum, migration.name],
          );
          await tx.script(migration.sql);
          await tx.query(
            `UPDATE "_prisma_migrations" SET finished_at = clock_timestamp(), applied_steps_count = 1 WHERE id = $1`,
            [id],
          );
        });
      } catch (err) {
        const denied = (err as { code?: unknown }).code === "42501"
          ? " (this role may not migrate: run the migrations as the tables' owner, KEYFLOW_MIGRATE_DATABASE_URL)"
          : "";
        const reason = `${err instanceof Error ? err.message : String(err)}${denied}`;
        throw new MigrationError(
          `Migration ${migration.name} failed and was rolled back (nothing of it is applied): ${reason}`,
          migration.name,
          { cause: err },
        );
      }
      applied.push(migration.name);
      options.log?.(`applied ${migration.name}`);
    }
    return { applied, alreadyApplied: status.applied, unknownInDatabase: status.unknownInDatabase };
  } finally {
    await session.release();
  }
}
