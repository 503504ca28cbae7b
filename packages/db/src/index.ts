// @keyflow/db: the Prisma client over either a real PostgreSQL server or an embedded PGlite.
//
//   const db = createDb();          // DATABASE_URL set → PostgreSQL, else PGlite in .keyflow/pglite
//                                   // (one process at a time may open a PGlite directory)
//   await migrate(db);              // apply prisma/migrations (idempotent)
//   await db.prisma.pipeline.findMany();
//   await db.close();
//
// The client is generated (git-ignored) into ./generated/prisma by `npm run db:generate -w @keyflow/db`.
import fs from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client";
import { defaultPgliteDir } from "./paths";
import { migrate, type MigrateOptions, type MigrateResult } from "./migrate";
import { createPGliteAdapter } from "./pglite-adapter";

export * from "./generated/prisma/client";
export { migrate, migrationStatus, MigrationError } from "./migrate";
export type { MigrateOptions, MigrateResult, MigrationStatus, MigrationInfo } from "./migrate";
export { AUDIT_ACTIONS, appendAuditEvent, auditHash, auditMac, canonicalJson, sha256Hex, verifyAuditChain } from "./audit";
export type { AuditAction, AuditInput, AuditVerification, HashedAuditFields, VerifyAuditOptions } from "./audit";
export { defaultAuditKeyFile, resolveAuditKey } from "./audit-key";
export { anchorEvery, defaultAnchorFile, readHeadAnchors } from "./audit-anchor";
export type { HeadAnchor } from "./audit-anchor";
export type { AuditKey } from "./audit-key";

export type DbKind = "postgres" | "pglite";

/** The connection under the Prisma client; migrate() and admin code use it directly. */
export type DbDriver =
  | { kind: "postgres"; pool: pg.Pool; /** from ?schema= in the URL; null = server default (public) */ schema: string | null }
  | { kind: "pglite"; pglite: PGlite };

export interface Db {
  prisma: PrismaClient;
  kind: DbKind;
  driver: DbDriver;
  /** Disconnects Prisma and closes the pool / the PGlite instance. */
  close(): Promise<void>;
}

/**
 * Which database: `databaseUrl` → PostgreSQL; else `dataDir` → PGlite; else env DATABASE_URL →
 * PostgreSQL; else PGlite in env KEYFLOW_PGLITE_DIR or <repo>/.keyflow/pglite.
 */
export interface CreateDbOptions {
  /** postgres://… of a real server. `?schema=name` is honoured (search_path), as in Prisma. */
  databaseUrl?: string;
  /** PGlite data directory (created if missing); ":memory:" = in memory, gone on close(). */
  dataDir?: string;
  /** Options passed to the pg Pool (real server only), e.g. { max: 5 }. */
  pool?: Omit<pg.PoolConfig, "connectionString">;
}

/**
 * Splits Prisma's `?schema=` parameter off a connection string (pg does not know it) and turns it
 * into a search_path, so both Prisma queries and migrate() work in that schema.
 */
export function parseDatabaseUrl(databaseUrl: string): { connectionString: string; schema: string | null } {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new Error("@keyflow/db: DATABASE_URL is not a valid URL (expected postgres://user:pass@host:port/db)");
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new Error(`@keyflow/db: DATABASE_URL must start with postgres:// or postgresql://, got ${url.protocol}//`);
  }
  const schema = url.searchParams.get("schema") || null;
  url.searchParams.delete("schema");
  if (schema !== null && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(schema)) {
    throw new Error(`@keyflow/db: unsupported ?schema=${schema} in DATABASE_URL (letters, digits and _ only)`);
  }
  return { connectionString: url.toString(), schema };
}

export function createDb(options: CreateDbOptions = {}): Db {
  // Explicit options beat the environment: a dataDir asks for PGlite even when DATABASE_URL is set.
  const databaseUrl = options.databaseUrl || (options.dataDir ? undefined : process.env.DATABASE_URL) || undefined;
  if (databaseUrl) {
    const { connectionString, schema } = parseDatabaseUrl(databaseUrl);
    // Session settings sent at connect time:
    // - TimeZone=UTC: @prisma/adapter-pg sends DateTime parameters as zone-less UTC text, which the
    //   server reads in the session time zone; on a server whose TimeZone is not UTC every
    //   timestamptz written through Prisma would be shifted (Prisma reads it back shifted the
    //   other way, hiding it, but raw SQL, now() and other clients would disagree).
    // - search_path from ?schema=, as Prisma does.
    const sessionOptions = [
      options.pool?.options,
      "-c TimeZone=UTC",
      schema ? `-c search_path=${quoteIdent(schema)}` : undefined,
    ].filter(Boolean).join(" ");
    const pool = new pg.Pool({ ...options.pool, connectionString, options: sessionOptions });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on("error", (err) => console.error("@keyflow/db: idle PostgreSQL connection error:", err.message));
    const adapter = new PrismaPg(pool, schema ? { schema } : undefined);
    const prisma = new PrismaClient({ adapter });
    return {
      prisma,
      kind: "postgres",
      driver: { kind: "postgres", pool, schema },
      async close() {
        await prisma.$disconnect();
        await pool.end();
      },
    };
  }

  const dataDir = options.dataDir ?? defaultPgliteDir();
  let pglite: PGlite;
  if (dataDir === ":memory:" || dataDir.startsWith("memory://")) {
    pglite = new PGlite("memory://");
  } else {
    fs.mkdirSync(dataDir, { recursive: true }); // PGlite creates only the last path segment
    pglite = new PGlite(dataDir);
  }
  // pglite-prisma-adapter 0.6.1, patched for Prisma 6.19 (see pglite-adapter.ts).
  const prisma = new PrismaClient({ adapter: createPGliteAdapter(pglite) });
  return {
    prisma,
    kind: "pglite",
    driver: { kind: "pglite", pglite },
    async close() {
      await prisma.$disconnect();
      if (!pglite.closed) await pglite.close();
    },
  };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Applies the migrations as the tables' owner. On a real server the app connects (DATABASE_URL) as
 * a member of `keyflow_app`, which may not migrate; env KEYFLOW_MIGRATE_DATABASE_URL then names the
 * owner, used for this call only. Unset (development, PGlite): migrates through `db` itself.
 */
export async function migrateAsOwner(db: Db, options: MigrateOptions = {}): Promise<MigrateResult> {
  const ownerUrl = process.env.KEYFLOW_MIGRATE_DATABASE_URL;
  if (db.kind !== "postgres" || !ownerUrl) return migrate(db, options);
  const owner = createDb({ databaseUrl: ownerUrl, pool: { max: 1 } });
  try {
    return await migrate(owner, options);
  } finally {
    await owner.close();
  }
}

/**
 * Why db's role could rewrite the audit trail (it owns audit_events, acts as its owner, or is a
 * superuser: it can switch the append-only triggers off), or null when it cannot. Always null on
 * PGlite, where there is one user. The web app and the runner log it as a warning at start.
 */
export async function auditTrailExposure(db: Db): Promise<string | null> {
  if (db.kind !== "postgres") return null;
  const rows = await db.prisma.$queryRawUnsafe<{ me: string; owner: string; acts_as_owner: boolean; superuser: boolean }[]>(
    `SELECT current_user::text AS me, t.tableowner::text AS owner, pg_has_role(current_user, t.tableowner, 'USAGE') AS acts_as_owner,
            COALESCE((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false) AS superuser
       FROM pg_tables t WHERE t.tablename = 'audit_events' AND t.schemaname = current_schema()`,
  );
  const row = rows[0];
  if (!row) return null;
  const why = row.superuser ? "is a superuser" : row.acts_as_owner ? `owns audit_events (or acts as its owner ${row.owner})` : null;
  if (why === null) return null;
  return `the database role ${row.me} ${why}: it can switch the audit trail's triggers off and rewrite it. ` +
    "Connect the app as a member of keyflow_app and migrate with KEYFLOW_MIGRATE_DATABASE_URL (README, \"The app's database role\")";
}
