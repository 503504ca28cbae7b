// `keyflow audit verify [--database-url URL] [--data-dir DIR] [--key-file FILE] [--anchor-file FILE]`:
// walks the audit trail's hash chain, checks every event against the anchor (its MAC under the audit
// key, which the database never sees) and the heads anchored in the anchor file (so that removing
// the newest events shows), and names the first event that does not hold (id, action, actor).
// Exit codes: 0 the trail holds, 1 a broken or unanchored event, 2 bad usage, no database, or MACs
// present but no key to check them.
import { parseArgs } from "node:util";
import { createDb, defaultAnchorFile, readHeadAnchors, resolveAuditKey, verifyAuditChain, type AuditKey, type Db } from "@keyflow/db";

const USAGE =
  "usage: keyflow audit verify [--database-url URL] [--data-dir DIR] [--key-file FILE] [--anchor-file FILE]   " +
  "(default: env DATABASE_URL, else the embedded PGlite; the key from env KEYFLOW_AUDIT_KEY, else KEYFLOW_AUDIT_KEY_FILE, else .keyflow/audit.key; " +
  "the heads from KEYFLOW_AUDIT_ANCHOR_FILE, else audit-anchor.jsonl beside the key file)";

export interface AuditCommandIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

const stdio: AuditCommandIo = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) };

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export async function auditCommand(args: readonly string[], io: AuditCommandIo = stdio): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: { "database-url": { type: "string" }, "data-dir": { type: "string" }, "key-file": { type: "string" }, "anchor-file": { type: "string" } },
      allowPositionals: true,
      strict: true,
    });
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
  const keyFile = parsed.values["key-file"];
  let key: AuditKey | undefined;
  try {
    key = resolveAuditKey(keyFile ? { keyFile } : {});
  } catch (err) {
    io.err(`keyflow audit verify: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  if (keyFile && !key) {
    io.err(`keyflow audit verify: no audit key in ${keyFile}`);
    return 2;
  }
  let db: Db;
  try {
    db = createDb({ ...(databaseUrl ? { databaseUrl } : {}), ...(dataDir ? { dataDir } : {}) });
  } catch (err) {
    io.err(`keyflow audit verify: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  try {
    const anchorFile = parsed.values["anchor-file"] ?? defaultAnchorFile();
    const heads = key ? readHeadAnchors(key.key, anchorFile) : undefined;
    const result = await verifyAuditChain(db.prisma, key ? { key: key.key, heads: heads?.anchors ?? [] } : {});
    if (result.ok) {
      io.out(`audit trail intact: ${plural(result.count, "event")}${result.lastHash ? `, last hash ${result.lastHash}` : ""}`);
      if (key) {
        const prefix = result.unanchoredPrefix > 0 ? ` (the first ${plural(result.unanchoredPrefix, "event")}, written before the key existed, through the MACs after them)` : "";
        io.out(`anchor holds: ${plural(result.anchored, "event")} checked against the audit key from ${key.source}${prefix}`);
        io.out(
          result.headId === null
            ? `head NOT anchored: ${anchorFile} holds no head of this trail, so removing its newest events would not show`
            : `head anchored in ${anchorFile} up to event ${result.headId}`,
        );
        const others = new Set(heads?.anchors.map((h) => h.chain).filter((c) => c !== result.chain));
        if (others.size > 0) io.out(`note: ${anchorFile} also holds heads of ${plural(others.size, "other trail")} (another database's, or this one emptied and started again)`);
        if (heads && heads.unreadable.length > 0) io.out(`note: ${plural(heads.unreadable.length, "line")} of ${anchorFile} not signed by this key (another key's trail, or forged), e.g. line ${heads.unreadable[0]}`);
        return 0;
      }
      // Without a key only the chain was checked, which whoever can write the table can recompute.
      if (await db.prisma.auditEvent.count({ where: { mac: { not: null } } }) > 0) {
        io.err("keyflow audit verify: the events carry MACs but no audit key was found to check them: set KEYFLOW_AUDIT_KEY or pass --key-file");
        return 2;
      }
      io.out("anchor NOT checked: no audit key (KEYFLOW_AUDIT_KEY or --key-file); the hash chain alone does not resist the database's owner");
      return 0;
    }
    const where = result.id === null ? "" : ` at event ${result.id}${result.event ? ` (${result.event.action} by ${result.event.actor})` : ""}`;
    io.err(`audit trail BROKEN${where}: ${result.reason}`);
    io.err(`  after ${plural(result.count, "intact event")}`);
    if (result.id !== null) {
      const label = result.problem === "prevHash" ? "prev_hash" : result.problem === "hash" ? "hash" : "mac";
      io.err(`  event id: ${result.id}`);
      io.err(`  expected ${label}: ${result.expected ?? "null"}`);
      io.err(`  stored   ${label}: ${result.stored ?? "null"}`);
    }
    return 1;
  } catch (err) {
    io.err(`keyflow audit verify: cannot read the audit trail: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  } finally {
    await db.close().catch(() => undefined);
  }
}
