// The audit trail's head, appended outside the database. The per-event MACs (audit.ts) catch any
// change before the newest MACed event, but not the removal of the newest events themselves: what
// is left is a valid chain with valid MACs. So the app also appends each head (every
// KEYFLOW_AUDIT_ANCHOR_EVERY events, default 1) to a JSON-lines file, MACed with the audit key, and
// `keyflow audit verify` checks that every anchored event is still there with the same hash.
// The file should live on storage the database's administrators cannot rewrite (an append-only
// file, `chattr +a`, or a log shipper to WORM storage); a line appended by O_APPEND is written whole.
// Lines carry their chain (the hash of its first event), so one file may serve several databases.
import { createHmac, timingSafeEqual } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { defaultAuditKeyFile } from "./audit-key";

export interface HeadAnchor {
  /** The hash of the chain's first event: which trail this line belongs to. */
  chain: string;
  /** The anchored event's id (decimal; ids are BigInt). */
  id: string;
  hash: string;
  action: string;
  actor: string;
  /** When it was anchored (ISO). */
  anchoredAt: string;
  mac: string;
}

/** KEYFLOW_AUDIT_ANCHOR_FILE, else audit-anchor.jsonl beside the audit key file. */
export function defaultAnchorFile(): string {
  return process.env.KEYFLOW_AUDIT_ANCHOR_FILE || path.join(path.dirname(defaultAuditKeyFile()), "audit-anchor.jsonl");
}

/** KEYFLOW_AUDIT_ANCHOR_EVERY: anchor the head once per this many events (default 1: every one). */
export function anchorEvery(): number {
  const raw = process.env.KEYFLOW_AUDIT_ANCHOR_EVERY;
  if (raw === undefined || raw.trim() === "") return 1;
  const every = Number(raw);
  if (!Number.isInteger(every) || every < 1) throw new Error(`KEYFLOW_AUDIT_ANCHOR_EVERY must be a whole number of events (1 or more), not "${raw}"`);
  return every;
}

function headMac(key: Buffer, a: Omit<HeadAnchor, "mac">): string {
  const text = JSON.stringify([a.chain, a.id, a.hash, a.action, a.actor, a.anchoredAt]);
  return createHmac("sha256", key).update(`keyflow.audit.head.v1\n${text}`).digest("hex");
}

// Per process and chain: the newest id anchored, so that an event is appended once.
const anchoredUpTo = new Map<string, bigint>();

/** Appends `event` as the head of `chain` unless fewer than `every` events came since the last one. */
export function appendHeadAnchor(key: Buffer, chain: string, event: { id: bigint; hash: string; action: string; actor: string }, file = defaultAnchorFile()): void {
  const last = anchoredUpTo.get(`${file}\n${chain}`);
  if (last !== undefined && event.id - last < BigInt(anchorEvery())) return;
  const fields = { chain, id: String(event.id), hash: event.hash, action: event.action, actor: event.actor, anchoredAt: new Date().toISOString() };
  const line: HeadAnchor = { ...fields, mac: headMac(key, fields) };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
  anchoredUpTo.set(`${file}\n${chain}`, event.id);
}

export interface ReadAnchors {
  /** The lines whose MAC holds under the key, in file order. */
  anchors: HeadAnchor[];
  /** Line numbers (1-based) that are not JSON anchors or whose MAC does not hold under the key. */
  unreadable: number[];
}

/** The file's anchors (none when it does not exist). */
export function readHeadAnchors(key: Buffer, file = defaultAnchorFile()): ReadAnchors {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { anchors: [], unreadable: [] };
    throw err;
  }
  const anchors: HeadAnchor[] = [];
  const unreadable: number[] = [];
  text.split("\n").forEach((raw, index) => {
    if (raw.trim() === "") return;
    try {
      const a = JSON.parse(raw) as HeadAnchor;
      const expected = Buffer.from(headMac(key, a), "hex");
      const stored = Buffer.from(String(a.mac), "hex");
      if (/^\d+$/.test(a.id) && stored.length === expected.length && timingSafeEqual(stored, expected)) anchors.push(a);
      else unreadable.push(index + 1);
    } catch {
      unreadable.push(index + 1);
    }
  });
  return { anchors, unreadable };
}
