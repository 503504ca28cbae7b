// The audit trail as the web app reads it: a compact diff of two documents for "edit" and
// "save_version" records, the filtered listing behind the Audit view, and the CSV/JSON export.
// Writing goes through @keyflow/db's appendAuditEvent (the hash chain lives there).
import type { PipelineDocumentInput } from "@keyflow/operators";
import type { Prisma, PrismaClient } from "@keyflow/db";
import { diffPipelines, edgeKey, isEmptyDiff } from "../../diff/diff";

/** What changed between two documents, small enough to keep in an audit row (positions are layout, not changes). */
export function auditDiff(before: PipelineDocumentInput | null, after: PipelineDocumentInput): Prisma.InputJsonObject | null {
  if (before === null) return { addedNodes: after.nodes.map((n) => n.id), removedNodes: [], changedNodes: [], addedEdges: (after.edges ?? []).map(edgeKey), removedEdges: [], settings: [] };
  const diff = diffPipelines(before, after);
  if (isEmptyDiff(diff)) return null;
  const plain: unknown = JSON.parse(
    JSON.stringify({
      addedNodes: diff.addedNodes.map((n) => n.id),
      removedNodes: diff.removedNodes.map((n) => n.id),
      changedNodes: diff.changedNodes.map((n) => ({ id: n.id, changes: n.changes.map((c) => ({ kind: c.kind, path: c.path, before: c.before ?? null, after: c.after ?? null })) })),
      addedEdges: diff.addedEdges.map((e) => e.key),
      removedEdges: diff.removedEdges.map((e) => e.key),
      settings: diff.settings.map((s) => ({ path: s.path, before: s.before ?? null, after: s.after ?? null })),
    }),
  );
  return plain as Prisma.InputJsonObject;
}

export interface AuditFilter {
  actor?: string | undefined;
  action?: string | undefined;
  /** A pipeline id: its own events and those of its versions and deployments. */
  pipelineId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
}

export function auditWhere(filter: AuditFilter): Prisma.AuditEventWhereInput {
  const where: Prisma.AuditEventWhereInput[] = [];
  if (filter.actor) where.push({ actor: { contains: filter.actor, mode: "insensitive" } });
  if (filter.action) where.push({ action: filter.action });
  if (filter.pipelineId) {
    // Every pipeline-related event carries the pipeline's id in details.pipelineId.
    where.push({ OR: [{ subjectType: "pipeline", subjectId: filter.pipelineId }, { details: { path: ["pipelineId"], equals: filter.pipelineId } }] });
  }
  if (filter.from) where.push({ at: { gte: filter.from } });
  if (filter.to) where.push({ at: { lte: filter.to } });
  return where.length > 0 ? { AND: where } : {};
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  subjectType: string;
  subjectId: string;
  details: Prisma.JsonValue;
  reason: string | null;
  prevHash: string | null;
  hash: string;
}

function toRow(event: { id: bigint; at: Date; actor: string; action: string; subjectType: string; subjectId: string; details: Prisma.JsonValue; reason: string | null; prevHash: string | null; hash: string }): AuditRow {
  return { ...event, id: event.id.toString() };
}

/** Newest first; `before` (an id) pages backwards. */
export async function listAuditEvents(prisma: PrismaClient, filter: AuditFilter, page: { limit: number; before?: string | undefined }) {
  const where = auditWhere(filter);
  const rows = await prisma.auditEvent.findMany({
    where: page.before ? { AND: [where, { id: { lt: BigInt(page.before) } }] } : where,
    orderBy: { id: "desc" },
    take: page.limit + 1,
  });
  const events = rows.slice(0, page.limit).map(toRow);
  return { events, nextCursor: rows.length > page.limit ? (events.at(-1)?.id ?? null) : null };
}

/** Every matching row, oldest first, in pages (the export streams them). */
export async function* allAuditEvents(prisma: PrismaClient, filter: AuditFilter, pageSize = 500): AsyncGenerator<AuditRow> {
  const where = auditWhere(filter);
  let cursor: bigint | undefined;
  for (;;) {
    const rows = await prisma.auditEvent.findMany({ where: cursor === undefined ? where : { AND: [where, { id: { gt: cursor } }] }, orderBy: { id: "asc" }, take: pageSize });
    for (const row of rows) yield toRow(row);
    const last = rows.at(-1);
    if (!last || rows.length < pageSize) return;
    cursor = last.id;
  }
}

export const CSV_COLUMNS = ["id", "at", "actor", "action", "subject_type", "subject_id", "reason", "details", "prev_hash", "hash"] as const;

/** RFC 4180: quoted when needed, quotes doubled. A leading = + - @ is prefixed with ' so a spreadsheet never runs it as a formula. */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvLine(row: AuditRow): string {
  const fields = [row.id, row.at.toISOString(), row.actor, row.action, row.subjectType, row.subjectId, row.reason ?? "", JSON.stringify(row.details), row.prevHash ?? "", row.hash];
  return `${fields.map(csvField).join(",")}\r\n`;
}
