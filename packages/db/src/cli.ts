// Keyflow database CLI.
//
//   tsx packages/db/src/cli.ts migrate [--database-url URL | --data-dir DIR]
//   tsx packages/db/src/cli.ts status  [--database-url URL | --data-dir DIR]
//
// Target: --database-url, else env DATABASE_URL (a real PostgreSQL server), else the embedded
// PGlite in --data-dir, env KEYFLOW_PGLITE_DIR, or <repo>/.keyflow/pglite.
import { parseArgs } from "node:util";
import { createDb, migrate, migrationStatus, MigrationError, type Db } from "./index";

const USAGE = `usage: cli.ts <migrate|status> [--database-url URL] [--data-dir DIR] [--migrations-dir DIR]`;

function describe(db: Db): string {
  if (db.driver.kind === "pglite") return `PGlite (${db.driver.pglite.dataDir ?? "memory"})`;
  const url = new URL(db.driver.pool.options.connectionString ?? "postgres://localhost");
  const schema = db.driver.schema ? ` schema ${db.driver.schema}` : "";
  return `PostgreSQL ${url.host}${url.pathname}${schema}`; // no user/password in logs
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      "database-url": { type: "string" },
      "data-dir": { type: "string" },
      "migrations-dir": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const command = positionals[0];
  if (values.help || (command !== "migrate" && command !== "status")) {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const db = createDb({
    ...(values["database-url"] ? { databaseUrl: values["database-url"] } : {}),
    ...(values["data-dir"] ? { dataDir: values["data-dir"] } : {}),
  });
  const options = values["migrations-dir"] ? { migrationsDir: values["migrations-dir"] } : {};
  try {
    console.log(`database: ${describe(db)}`);
    if (command === "migrate") {
      const result = await migrate(db, { ...options, log: (line) => console.log(line) });
      for (const name of result.unknownInDatabase) {
        console.warn(`warning: ${name} is applied in the database but missing from prisma/migrations`);
      }
      console.log(
        result.applied.length === 0
          ? `up to date (${result.alreadyApplied.length} migrations already applied)`
          : `applied ${result.applied.length} migration(s); ${result.alreadyApplied.length} were already applied`,
      );
    } else {
      const status = await migrationStatus(db, options);
      for (const name of status.applied) console.log(`applied   ${name}${status.modified.includes(name) ? "  (MODIFIED since applied)" : ""}`);
      for (const name of status.pending) console.log(`pending   ${name}${status.failed.includes(name) ? "  (FAILED earlier)" : ""}`);
      for (const name of status.unknownInDatabase) console.log(`unknown   ${name}  (in the database only)`);
      if (status.pending.length > 0 || status.modified.length > 0) return 1;
    }
    return 0;
  } catch (err) {
    if (err instanceof MigrationError) console.error(`error: ${err.message}`);
    else console.error(err);
    return 1;
  } finally {
    await db.close();
  }
}

process.exitCode = await main();
