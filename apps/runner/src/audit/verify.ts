// `keyflow audit verify [--database-url URL] [--data-dir DIR]`: walks the audit trail's hash chain
// and names the first broken record (its id, the hash its content gives and the hash stored).
// Exit codes: 0 the chain holds, 1 a broken record, 2 bad usage or no database.
import { parseArgs } from "node:util";
import { createDb, verifyAuditChain, type Db } from "@keyflow/db";

const USAGE = "usage: keyflow audit verify [--database-url URL] [--data-dir DIR]   (default: env DATABASE_URL, else the embedded PGlite)";

export interface AuditCommandIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const stdio: AuditCommandIo = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) };

export async function auditCommand(args: readonly string[], io: AuditCommandIo = stdio): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: { "database-url": { type: "string" }, "data-dir": { type: "string" } }, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`keyflow audit: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  const [sub, ...extra] = parsed.positionals;
  if (sub !== "verify" || extra.length > 0) {
    io.err(`keyflow audit: ${sub === undefined ? "missing subcommand" : `unknown subcommand "${[sub, ...extra].join(" ")}"`}\n${USAGE}`);
    return 2;
  }
  const databaseUrl = parsed.values["database-url"];
  const dataDir = parsed.values["data-dir"];
  let db: Db;
  try {
    db = createDb({ ...(databaseUrl ? { databaseUrl } : {}), ...(dataDir ? { dataDir } : {}) });
  } catch (err) {
    io.err(`keyflow audit verify: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  try {
    const result = await verifyAuditChain(db.prisma);
    if (result.ok) {
      io.out(`audit trail intact: ${result.count} event${result.count === 1 ? "" : "s"}${result.lastHash ? `, last hash ${result.lastHash}` : ""}`);
      return 0;
    }
    io.err(`audit trail BROKEN at event ${result.id} (after ${result.count} intact event${result.count === 1 ? "" : "s"}): ${result.message}`);
    io.err(`  event id: ${result.id}`);
    io.err(`  expected ${result.problem === "hash" ? "hash" : "prev_hash"}: ${result.expected ?? "null"}`);
    io.err(`  stored   ${result.problem === "hash" ? "hash" : "prev_hash"}: ${result.stored ?? "null"}`);
    return 1;
  } catch (err) {
    io.err(`keyflow audit verify: cannot read the audit trail: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  } finally {
    await db.close().catch(() => undefined);
  }
}
