// Notifications for approvers: something they must know (an emergency rollback) is stored as a row
// that everyone with at least the audience's role sees in the app (a badge of unread ones and a
// list), and POSTed as JSON to KEYFLOW_NOTIFY_WEBHOOK when it is set. The notification and its
// audit record commit together; the webhook's answer (status, or why it failed) is recorded on the
// row and audited too. A webhook that fails never undoes what was notified.
import { appendAuditEvent, type Prisma, type PrismaClient, type UserRole } from "@keyflow/db";
import { hasRole, ROLES, type SessionUser } from "../auth/roles";

const WEBHOOK_TIMEOUT_MS = 5_000;

export interface NotificationInput {
  kind: string;
  actor: string;
  audience?: UserRole;
  pipelineId?: string | null;
  title: string;
  body?: string;
  details?: Prisma.InputJsonObject;
}

/** What the webhook receives. */
export interface NotificationEvent {
  id: string;
  at: string;
  kind: string;
  audience: UserRole;
  actor: string;
  pipelineId: string | null;
  title: string;
  body: string;
  details: Prisma.JsonValue;
}

async function postWebhook(url: string, event: NotificationEvent): Promise<string> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "user-agent": "keyflow-notify" },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return res.ok ? String(res.status) : `failed: HTTP ${res.status}`;
  } catch (error) {
    return `failed: ${error instanceof Error ? (error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message) : String(error)}`;
  }
}

/** Stores the notification (audited with it), then POSTs it to the webhook when one is set. */
export async function notifyApprovers(prisma: PrismaClient, input: NotificationInput, webhookUrl: string | undefined) {
  const audience = input.audience ?? "approver";
  const created = await prisma.$transaction(async (tx) => {
    const row = await tx.notification.create({
      data: { kind: input.kind, audience, actor: input.actor, pipelineId: input.pipelineId ?? null, title: input.title, body: input.body ?? "", details: input.details ?? {} },
    });
    await appendAuditEvent(tx, {
      actor: input.actor,
      action: "notify",
      subjectType: "notification",
      subjectId: row.id,
      details: { pipelineId: input.pipelineId ?? null, kind: input.kind, audience, channel: "in-app", title: input.title, webhook: webhookUrl ? new URL(webhookUrl).host : null },
    });
    return row;
  });
  if (!webhookUrl) return created;
  const event: NotificationEvent = { id: created.id, at: created.at.toISOString(), kind: created.kind, audience, actor: created.actor, pipelineId: created.pipelineId, title: created.title, body: created.body, details: created.details };
  const result = await postWebhook(webhookUrl, event);
  return prisma.$transaction(async (tx) => {
    const row = await tx.notification.update({ where: { id: created.id }, data: { webhookResult: result } });
    await appendAuditEvent(tx, { actor: input.actor, action: "notify", subjectType: "notification", subjectId: created.id, details: { pipelineId: input.pipelineId ?? null, kind: input.kind, channel: "webhook", webhook: new URL(webhookUrl).host, result } });
    return row;
  });
}

/** The roles a user's notifications are addressed to: their own and every lower one. */
const audiencesOf = (role: UserRole): UserRole[] => ROLES.filter((r) => hasRole(role, r));

/** The user's notifications, newest first, with whether they read each, and how many are unread. */
export async function listNotifications(prisma: PrismaClient, user: SessionUser, limit = 50) {
  const where = { audience: { in: audiencesOf(user.role) } };
  const [rows, unread] = await Promise.all([
    prisma.notification.findMany({ where, orderBy: { at: "desc" }, take: limit, include: { reads: { where: { userId: user.id }, select: { readAt: true } } } }),
    prisma.notification.count({ where: { ...where, reads: { none: { userId: user.id } } } }),
  ]);
  return {
    unread,
    notifications: rows.map(({ reads, ...n }) => ({ ...n, readAt: reads[0]?.readAt ?? null })),
  };
}

/** Marks notifications read for this user (all of theirs when `ids` is absent). */
export async function markNotificationsRead(prisma: PrismaClient, user: SessionUser, ids?: readonly string[]) {
  const visible = await prisma.notification.findMany({ where: { audience: { in: audiencesOf(user.role) }, ...(ids ? { id: { in: [...ids] } } : {}), reads: { none: { userId: user.id } } }, select: { id: true } });
  if (visible.length > 0) await prisma.notificationRead.createMany({ data: visible.map((n) => ({ notificationId: n.id, userId: user.id })), skipDuplicates: true });
  return { marked: visible.length };
}

/** An emergency rollback skipped the approval rule: every approver hears of it, with the reason. */
export async function notifyEmergencyRollback(
  prisma: PrismaClient,
  input: { actor: string; pipelineId: string; reason: string; to: { versionId: string; number: number }; from: readonly { versionId: string; number: number }[]; deploymentId: string },
  webhookUrl: string | undefined,
) {
  const pipeline = await prisma.pipeline.findUnique({ where: { id: input.pipelineId }, select: { name: true } });
  const name = pipeline?.name ?? input.pipelineId;
  const from = input.from.map((v) => `v${v.number}`).join(", ") || "nothing";
  return notifyApprovers(
    prisma,
    {
      kind: "emergency_rollback",
      actor: input.actor,
      pipelineId: input.pipelineId,
      title: `Emergency rollback of ${name}: ${from} → v${input.to.number}`,
      body: `${input.actor} rolled ${name} back to version ${input.to.number} without an approval: ${input.reason}`,
      details: { pipelineId: input.pipelineId, name, reason: input.reason, to: { ...input.to }, from: input.from.map((v) => ({ ...v })), deploymentId: input.deploymentId },
    },
    webhookUrl,
  );
}
