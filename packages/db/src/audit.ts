// The audit trail's hash chain: appending an event and verifying the chain. Shared by the web app
// (which records every action) and `keyflow audit verify` (which checks the chain), so both hash
// exactly the same bytes.
//
// Each row stores prevHash (the previous row's hash; null for the first) and
// hash = sha256(canonical JSON of { at, actor, action, subjectType, subjectId, details, reason, prevHash }).
// Writers take a transaction-level advisory lock before reading the last hash, so concurrent
// writers queue up and the chain stays linear (no two rows with the same prevHash).
import { createHash } from "node:crypto";
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

type Tx = Prisma.TransactionClient;

async function appendLocked(tx: Tx, input: AuditInput, at: Date) {
  await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(${AUDIT_ADVISORY_LOCK_KEY}::bigint)`;
  const last = await tx.auditEvent.findFirst({ orderBy: { id: "desc" }, select: { hash: true } });
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
  return tx.auditEvent.create({ data: { ...fields, details, hash: auditHash(fields) } });
}

/**
 * Appends one event. Given a PrismaClient it opens its own transaction; given a transaction
 * client (`prisma.$transaction(async (tx) => …)`) it joins it, so the action and its record commit
 * together.
 */
export async function appendAuditEvent(client: PrismaClient | Tx, input: AuditInput, at: Date = new Date()) {
  if ("$transaction" in client) return client.$transaction((tx) => appendLocked(tx, input, at));
  return appendLocked(client, input, at);
}

export type AuditVerification =
  | { ok: true; count: number; lastHash: string | null }
  | {
      ok: false;
      count: number;
      /** The first broken row. */
      id: bigint;
      problem: "hash" | "prevHash";
      expected: string | null;
      stored: string | null;
      message: string;
    };

/** Walks the chain in id order (in pages, so a long trail is not loaded at once). */
export async function verifyAuditChain(prisma: PrismaClient, pageSize = 1000): Promise<AuditVerification> {
  let prev: string | null = null;
  let cursor: bigint | undefined;
  let count = 0;
  for (;;) {
    const rows = await prisma.auditEvent.findMany({
      where: cursor === undefined ? {} : { id: { gt: cursor } },
      orderBy: { id: "asc" },
      take: pageSize,
    });
    if (rows.length === 0) return { ok: true, count, lastHash: prev };
    for (const row of rows) {
      if (row.prevHash !== prev) {
        return {
          ok: false,
          count,
          id: row.id,
          problem: "prevHash",
          expected: prev,
          stored: row.prevHash,
          message: `audit event ${row.id}: prev_hash is ${row.prevHash ?? "null"}, expected ${prev ?? "null"} (the hash of the event before it)`,
        };
      }
      const expected = auditHash(row);
      if (expected !== row.hash) {
        return {
          ok: false,
          count,
          id: row.id,
          problem: "hash",
          expected,
          stored: row.hash,
          message: `audit event ${row.id}: stored hash ${row.hash} but its content hashes to ${expected}`,
        };
      }
      prev = row.hash;
      count += 1;
      cursor = row.id;
    }
  }
}
