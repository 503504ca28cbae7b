// The audit trail's hash chain: appending an event and verifying the chain. Shared by the web app
// (which records every action) and `keyflow audit verify` (which checks the chain), so both hash
// exactly the same bytes.
//
// Each row stores prevHash (the previous row's hash; null for the first) and
// hash = sha256(canonical JSON of { at, actor, action, subjectType, subjectId, details, reason, prevHash }).
// Writers take a transaction-level advisory lock before reading the last hash, so concurrent
// writers queue up and the chain stays linear (no two rows with the same prevHash).
//
// The chain alone proves nothing against whoever can write the table (they recompute it), so each
// row also stores mac = HMAC-SHA256(audit key, hash), the key held by the app and the auditors and
// never by the database (audit-key.ts). Since `hash` covers `prevHash`, one event's MAC vouches for
// every event before it: an edit, insertion or deletion before the newest MACed event shows up as
// the first event whose recomputed hash no longer matches its MAC. An auditor trusts this because it
// rests on a secret outside the database's reach, not on the database's own permissions. Removing
// the newest events leaves valid MACs behind; the head anchored in a file (audit-anchor.ts) shows it.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { appendHeadAnchor, type HeadAnchor } from "./audit-anchor";
import { resolveAuditKey } from "./audit-key";
import type { Prisma, PrismaClient } from "./generated/prisma/client";

/** Serialises audit writers (transaction-scoped; released at commit or rollback). "kfaudit" in ASCII. */
export const AUDIT_ADVISORY_LOCK_KEY = 0x6b6661756469;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, `undefined` members
 * dropped, arrays kept in order. Two values that differ only in key order get the same text, which
 * is what makes hashes of JSONB columns (whose key order PostgreSQL chooses) reproducible.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map((item: unknown) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  }
  if (!isRecord(value)) {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonicalJson: ${typeof value} is not JSON`);
    return text;
  }
  const entries = Object.entries(value)
    .filter(([, member]) => member !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(",")}}`;
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The audited actions. Later ones (request … rollback) belong to promotion. */
export const AUDIT_ACTIONS = [
  "login",
  "login_failed",
  "logout",
  "create",
  "edit",
  "import",
  "save_version",
  "deploy",
  "stop",
  // Job controls of a running deployment (the Operations tab).
  "savepoint",
  "restore",
  "rescale",
  // A records-per-second cap on a sink of a running job, set or lifted.
  "throttle",
  "user_create",
  "role_change",
  "password_change",
  "request",
  "approve",
  "reject",
  "promote",
  "rollback",
  "void",
  // A version replayed over a recorded range (apps/web services/backtests.ts).
  "backtest",
  // A recorded file sent to the runner for backtests (apps/web services/backtests-files.ts).
  "upload",
  // Approvers told of an event (in the app, and by webhook when one is set).
  "notify",
  // The reconciler started a deployment again after a runner restart, or marked it failed (apps/web services/reconciler.ts).
  "reconcile",
  // A stopped deployment started again from its last checkpoint or a savepoint.
  "resume",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditInput {
  /** Who: the user's email (or a service principal such as `npm-start`). */
  actor: string;
  action: AuditAction;
  /** What: e.g. "pipeline", "version", "deployment", "user", "session". */
  subjectType: string;
  subjectId: string;
  /** The diff for edits and versions, the new role for role changes … plain JSON. */
  details?: Prisma.InputJsonObject;
  /** Why, when the actor gave a reason. */
  reason?: string | null;
}

/** The fields a row's hash covers, as they are stored. */
export interface HashedAuditFields {
  at: Date;
  actor: string;
  action: string;
  subjectType: string;
  subjectId: string;
  details: unknown;
  reason: string | null;
  prevHash: string | null;
}

export function auditHash(row: HashedAuditFields): string {
  return sha256Hex(
    canonicalJson({
      at: row.at.toISOString(),
      actor: row.actor,
      action: row.action,
      subjectType: row.subjectType,
      subjectId: row.subjectId,
      details: row.details,
      reason: row.reason,
      prevHash: row.prevHash,
    }),
  );
}

/** The anchor of one event: HMAC-SHA256 over its hash (domain-separated), hex. */
export function auditMac(key: Buffer, hash: string): string {
  return createHmac("sha256", key).update(`keyflow.audit.v1\n${hash}`).digest("hex");
}

function macMatches(key: Buffer, hash: string, stored: string): boolean {
  const expected = Buffer.from(auditMac(key, hash), "hex");
  const actual = Buffer.from(stored, "hex");
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

// The writer's key, created on first use when there is none (resolved again if the env changes).
let writerKey: { env: string | undefined; key: Buffer } | undefined;
function currentWriterKey(): Buffer {
  const env = process.env.KEYFLOW_AUDIT_KEY;
  if (writerKey?.env !== env || writerKey === undefined) {
    const resolved = resolveAuditKey({ create: true });
    if (!resolved) throw new Error("audit key: none found and none could be created");
    writerKey = { env, key: resolved.key };
  }
  return writerKey.key;
}

type Tx = Prisma.TransactionClient;

const HEAD = { id: true, hash: true, action: true, actor: true } as const;

/** Anchors `event` as the head of its chain (whose first event's hash names the chain). */
async function anchorHead(tx: Tx, event: { id: bigint; hash: string; action: string; actor: string; prevHash: string | null }) {
  const first = event.prevHash === null ? event : await tx.auditEvent.findFirst({ orderBy: { id: "asc" }, select: { hash: true } });
  if (first) appendHeadAnchor(currentWriterKey(), first.hash, event);
}

async function appendLocked(tx: Tx, input: AuditInput, at: Date) {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(${AUDIT_ADVISORY_LOCK_KEY}::bigint)`;
  const last = await tx.auditEvent.findFirst({ orderBy: { id: "desc" }, select: { ...HEAD, prevHash: true } });
  // Under the lock the newest row is committed (its writer released the lock at commit), so it can
  // be anchored now; the row written below is anchored after its own commit, or by the next writer.
  if (last) await anchorHead(tx, last);
  // Round-trip the details through JSON so what is hashed is what JSONB gives back.
  const details: Prisma.InputJsonObject = JSON.parse(JSON.stringify(input.details ?? {})) as Prisma.InputJsonObject;
  const fields: HashedAuditFields = {
    at,
    actor: input.actor,
    action: input.action,
    subjectType: input.subjectType,
    subjectId: input.subjectId,
    details,
    reason: input.reason ?? null,
    prevHash: last?.hash ?? null,
  };
  const hash = auditHash(fields);
  return tx.auditEvent.create({ data: { ...fields, details, hash, mac: auditMac(currentWriterKey(), hash) } });
}

/**
 * Appends one event. Given a PrismaClient it opens its own transaction; given a transaction
 * client (`prisma.$transaction(async (tx) => …)`) it joins it, so the action and its record commit
 * together.
 */
export async function appendAuditEvent(client: PrismaClient | Tx, input: AuditInput, at: Date = new Date()) {
  if ("$transaction" in client) {
    const row = await client.$transaction((tx) => appendLocked(tx, input, at));
    await client.$transaction((tx) => anchorHead(tx, row));
    return row;
  }
  return appendLocked(client, input, at);
}

export type AuditVerification =
  | {
      ok: true;
      count: number;
      lastHash: string | null;
      /** Events whose MAC was checked against the key (0 when no key was given). */
      anchored: number;
      /** Events at the start written before the key existed (no MAC); the first MACed one vouches for them. */
      unanchoredPrefix: number;
      /** The newest event found as anchored in the heads given (null: none given for this chain). */
      headId: bigint | null;
      /** The first event's hash: names this chain in the anchor file (null: no events). */
      chain: string | null;
    }
  | {
      ok: false;
      count: number;
      /** The first broken row (null: the trail as a whole, e.g. no MAC anywhere). */
      id: bigint | null;
      /** What it says it is, for the message: "approve by x@bank". */
      event: { action: string; actor: string } | null;
      problem: "hash" | "prevHash" | "anchor";
      expected: string | null;
      stored: string | null;
      /** What is wrong with that event, without its id. */
      reason: string;
      message: string;
    };

export interface VerifyAuditOptions {
  /** The audit key: checks every event's MAC (the anchor) besides the chain. */
  key?: Buffer;
  /** Heads anchored outside the database (audit-anchor.ts readHeadAnchors, MACs checked); with a key only. */
  heads?: readonly HeadAnchor[];
  pageSize?: number;
}

/** Walks the chain in id order (in pages, so a long trail is not loaded at once), and the anchor with a key. */
export async function verifyAuditChain(prisma: PrismaClient, options: VerifyAuditOptions = {}): Promise<AuditVerification> {
  const { key, pageSize = 1000 } = options;
  // The heads of this chain (known at its first event), by id; the walk meets them in order.
  let heads: HeadAnchor[] = [];
  let nextHead = 0;
  let headId: bigint | null = null;
  let lastId: bigint | null = null;
  let prev: string | null = null;
  let cursor: bigint | undefined;
  let count = 0;
  let anchored = 0;
  let unanchoredPrefix = 0;
  let lastMacId: bigint | undefined;
  let chain: string | null = null;
  const missing = (head: HeadAnchor, atEnd: boolean): AuditVerification => {
    const where = atEnd ? ` (the trail now ends at event ${lastId ?? "none"})` : "";
    const reason = `it was anchored but is missing from the database${where}: deleted after it was anchored`;
    return { ok: false, count, id: BigInt(head.id), event: { action: head.action, actor: head.actor }, problem: "anchor", expected: head.hash, stored: null, reason, message: `audit event ${head.id}: ${reason}` };
  };
  for (;;) {
    const rows = await prisma.auditEvent.findMany({
      where: cursor === undefined ? {} : { id: { gt: cursor } },
      orderBy: { id: "asc" },
      take: pageSize,
    });
    if (rows.length === 0) break;
    for (const row of rows) {
      const broken = (problem: "hash" | "prevHash" | "anchor", expected: string | null, stored: string | null, reason: string): AuditVerification => ({
        ok: false,
        count,
        id: row.id,
        event: { action: row.action, actor: row.actor },
        problem,
        expected,
        stored,
        reason,
        message: `audit event ${row.id}: ${reason}`,
      });
      chain ??= row.hash;
      if (key && options.heads && prev === null) {
        const byId = new Map(options.heads.filter((h) => h.chain === row.hash).map((h) => [h.id, h]));
        heads = [...byId.values()].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
      }
      const skipped = heads[nextHead];
      if (skipped && BigInt(skipped.id) < row.id) return missing(skipped, false);
      if (row.prevHash !== prev) {
        return broken("prevHash", prev, row.prevHash, `prev_hash is ${row.prevHash ?? "null"}, expected ${prev ?? "null"} (the hash of the event before it)`);
      }
      const expected = auditHash(row);
      if (expected !== row.hash) {
        return broken("hash", expected, row.hash, `stored hash ${row.hash} but its content hashes to ${expected}`);
      }
      if (key) {
        if (row.mac !== null) {
          if (!macMatches(key, row.hash, row.mac)) {
            return broken("anchor", auditMac(key, row.hash), row.mac, "does not match the anchor: its hash was recomputed after it was anchored");
          }
          anchored += 1;
          lastMacId = row.id;
        } else if (lastMacId !== undefined) {
          return broken("anchor", auditMac(key, row.hash), null, `does not match the anchor: it has no MAC, although event ${lastMacId} before it has one (written or rewritten without the audit key)`);
        } else {
          unanchoredPrefix += 1;
        }
        const head = heads[nextHead];
        if (head && BigInt(head.id) === row.id) {
          if (head.hash !== row.hash) return broken("anchor", head.hash, row.hash, "does not match the anchor: its hash was recomputed after it was anchored");
          headId = row.id;
          nextHead += 1;
        }
      }
      prev = row.hash;
      count += 1;
      cursor = row.id;
      lastId = row.id;
    }
  }
  const cut = heads[nextHead];
  if (cut) return missing(cut, true);
  if (key && count > 0 && anchored === 0) {
    const reason = `none of the ${count} events carries a MAC although an audit key is given: the trail was written without this key, or rewritten without its MACs`;
    return { ok: false, count, id: null, event: null, problem: "anchor", expected: null, stored: null, reason, message: `audit trail: ${reason}` };
  }
  return { ok: true, count, lastHash: prev, anchored, unanchoredPrefix, headId, chain };
}
