// One database per server process, opened and migrated on first use (not at import, so
// `next build` never touches it). Kept on globalThis because `next dev` re-evaluates modules on
// every change, and an embedded PGlite directory can be open in one process once only.
// Opening it also creates the first admin when there are no users yet (auth/bootstrap.ts).
import { auditTrailExposure, createDb, migrateAsOwner, type Db } from "@keyflow/db";
import { ensureFirstAdmin } from "./auth/bootstrap";
import { authEnv } from "./env";

const holder = globalThis as typeof globalThis & { __keyflowDb?: Promise<Db> };

async function open(): Promise<Db> {
  const db = createDb();
  try {
    // Issue 35 point 9: migrations run as the owner (KEYFLOW_MIGRATE_DATABASE_URL when set), the
    // app itself as keyflow_app; a role that could rewrite the audit trail is warned about.
    await migrateAsOwner(db);
    const exposure = await auditTrailExposure(db);
    if (exposure) console.warn(`[keyflow] warning: ${exposure}`);
    await ensureFirstAdmin(db.prisma, authEnv());
    return db;
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}

export function getDb(): Promise<Db> {
  holder.__keyflowDb ??= open().catch((error: unknown) => {
    holder.__keyflowDb = undefined; // let the next request try again
    throw error;
  });
  return holder.__keyflowDb;
}
