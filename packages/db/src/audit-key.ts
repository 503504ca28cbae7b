// The audit key: the secret under which every audit event's hash is MACed (audit.ts), held by the
// app and the auditors, never by the database. Someone with full access to the database can rewrite
// rows and recompute the hash chain, but not the MACs, so `keyflow audit verify` finds them out.
//
// Where it comes from: env KEYFLOW_AUDIT_KEY (at least 32 characters; from the bank's secret store),
// else the key file env KEYFLOW_AUDIT_KEY_FILE, else <repo>/.keyflow/audit.key. The app creates the
// key file on its first audit event (32 random bytes, hex, mode 0600); verify only reads it.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "./paths";

export interface AuditKey {
  key: Buffer;
  /** Where it came from, for messages: "KEYFLOW_AUDIT_KEY" or the file's path. */
  source: string;
}

const MIN_LENGTH = 32;

export function defaultAuditKeyFile(): string {
  return process.env.KEYFLOW_AUDIT_KEY_FILE || path.join(repoRoot(), ".keyflow", "audit.key");
}

function parseKey(text: string, source: string): AuditKey {
  const value = text.trim();
  if (value.length < MIN_LENGTH) throw new Error(`audit key from ${source} is too short (${value.length} characters; at least ${MIN_LENGTH})`);
  return { key: Buffer.from(value, "utf8"), source };
}

function readKeyFile(file: string): AuditKey | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  return parseKey(text, file);
}

/**
 * The audit key, or undefined when there is none. With `create`, a missing key file is created
 * (exclusively, so concurrent first starts agree on one key).
 */
export function resolveAuditKey(opts: { create?: boolean; keyFile?: string } = {}): AuditKey | undefined {
  const fromEnv = process.env.KEYFLOW_AUDIT_KEY;
  if (fromEnv) return parseKey(fromEnv, "KEYFLOW_AUDIT_KEY");
  const file = opts.keyFile ?? defaultAuditKeyFile();
  const found = readKeyFile(file);
  if (found || !opts.create) return found;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Written whole under a temporary name, then linked into place: a concurrent first start either
  // wins the link or reads the winner's complete file, never a half-written one.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  fs.writeFileSync(tmp, `${randomBytes(32).toString("hex")}\n`, { flag: "wx", mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return readKeyFile(file);
}
