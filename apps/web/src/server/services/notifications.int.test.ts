// Approvers' notifications against a REAL PostgreSQL (DATABASE_URL) and a real local HTTP server as
// KEYFLOW_NOTIFY_WEBHOOK: an emergency rollback's notification is stored with its audit record,
// POSTed to the webhook as JSON (what arrived is checked), a failing or unreachable webhook is
// recorded as such without losing the notification, and the badge counts per person and role.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl, verifyAuditChain, type Db } from "@keyflow/db";
import type { SessionUser } from "../auth/roles";
import { listNotifications, markNotificationsRead, notifyApprovers, notifyEmergencyRollback } from "./notifications";
import { dropTestSchema } from "./runner-process.testing";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("notifications.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");

let db: Db;
let server: Server;
let webhook = "";
/** What the webhook received, in order; `answer` is the status it gives. */
const received: { method: string; path: string; contentType: string | undefined; body: unknown }[] = [];
let answer = 204;

const pat: SessionUser = { id: "u-pat", email: "pat@bank.test", name: "pat", role: "approver" };
const sam: SessionUser = { id: "u-sam", email: "sam@bank.test", name: "sam", role: "approver" };
const ada: SessionUser = { id: "u-ada", email: "ada@bank.test", name: "ada", role: "analyst" };
const root: SessionUser = { id: "u-root", email: "root@bank.test", name: "root", role: "admin" };

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

beforeAll(async () => {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  url.searchParams.set("schema", `kf_notify_${process.pid}_${Date.now().toString(36)}`);
  db = createDb({ databaseUrl: url.toString() });
  await migrate(db);
  server = createServer((req, res) => {
    void bodyOf(req).then((text) => {
      received.push({ method: req.method ?? "", path: req.url ?? "", contentType: req.headers["content-type"], body: JSON.parse(text) as unknown });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  webhook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/keyflow`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await dropTestSchema(db);
});

describe("approvers' notifications", () => {
  let pipelineId = "";

  it("an emergency rollback is stored, audited, and POSTed to the webhook as JSON", async () => {
    pipelineId = (await db.prisma.pipeline.create({ data: { name: "card-velocity", draft: {} } })).id;
    const n = await notifyEmergencyRollback(
      db.prisma,
      { actor: pat.email, pipelineId, reason: "v4 blocks every card payment since 09:12", to: { versionId: "ver3", number: 3 }, from: [{ versionId: "ver4", number: 4 }], deploymentId: "dep9" },
      webhook,
    );
    expect(n).toMatchObject({ kind: "emergency_rollback", audience: "approver", actor: pat.email, pipelineId, title: "Emergency rollback of card-velocity: v4 → v3", webhookResult: "204" });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: "POST", path: "/hooks/keyflow", contentType: "application/json" });
    expect(received[0]?.body).toEqual({
      id: n.id,
      at: n.at.toISOString(),
      kind: "emergency_rollback",
      audience: "approver",
      actor: pat.email,
      pipelineId,
      title: "Emergency rollback of card-velocity: v4 → v3",
      body: "pat@bank.test rolled card-velocity back to version 3 without an approval: v4 blocks every card payment since 09:12",
      details: { pipelineId, name: "card-velocity", reason: "v4 blocks every card payment since 09:12", to: { versionId: "ver3", number: 3 }, from: [{ versionId: "ver4", number: 4 }], deploymentId: "dep9" },
    });
    // Audited twice: the notification itself (in the same transaction as its row), then the webhook's answer.
    const audit = await db.prisma.auditEvent.findMany({ where: { action: "notify", subjectId: n.id }, orderBy: { id: "asc" } });
    expect(audit.map((e) => e.details)).toEqual([
      { pipelineId, kind: "emergency_rollback", audience: "approver", channel: "in-app", title: n.title, webhook: new URL(webhook).host },
      { pipelineId, kind: "emergency_rollback", channel: "webhook", webhook: new URL(webhook).host, result: "204" },
    ]);
    expect((await verifyAuditChain(db.prisma)).ok).toBe(true);
  });

  it("a webhook that answers an error, or cannot be reached, is recorded as failed; the notification stays", async () => {
    answer = 500;
    const failing = await notifyApprovers(db.prisma, { kind: "test", actor: sam.email, pipelineId, title: "webhook answers 500" }, webhook);
    expect(failing.webhookResult).toBe("failed: HTTP 500");
    expect(received).toHaveLength(2);
    const closed = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const unreachable = await notifyApprovers(db.prisma, { kind: "test", actor: sam.email, pipelineId, title: "nobody listens" }, `http://127.0.0.1:${closed}/`);
    expect(unreachable.webhookResult).toMatch(/^failed: fetch failed \(.*ECONNREFUSED/);
    expect(await db.prisma.notification.count({ where: { id: { in: [failing.id, unreachable.id] } } })).toBe(2);
    // Without a webhook: in the app only, nothing POSTed.
    const quiet = await notifyApprovers(db.prisma, { kind: "test", actor: sam.email, pipelineId, title: "in the app only" }, undefined);
    expect(quiet.webhookResult).toBeNull();
    expect(received).toHaveLength(2);
  });

  it("the badge: each approver and admin sees the unread ones until they read them; analysts see none", async () => {
    expect((await listNotifications(db.prisma, pat)).unread).toBe(4);
    expect((await listNotifications(db.prisma, root)).unread).toBe(4);
    expect(await listNotifications(db.prisma, ada)).toEqual({ unread: 0, notifications: [] });
    const list = await listNotifications(db.prisma, pat);
    expect(list.notifications[0]).toMatchObject({ title: "in the app only", readAt: null });
    expect(await markNotificationsRead(db.prisma, pat, [list.notifications[0]?.id ?? ""])).toEqual({ marked: 1 });
    expect((await listNotifications(db.prisma, pat)).unread).toBe(3);
    expect(await markNotificationsRead(db.prisma, pat)).toEqual({ marked: 3 });
    expect((await listNotifications(db.prisma, pat)).unread).toBe(0);
    // Reading is per person: Sam still has all four.
    expect((await listNotifications(db.prisma, sam)).unread).toBe(4);
    // An analyst cannot mark an approver's notification read (it is not addressed to them).
    expect(await markNotificationsRead(db.prisma, ada, [list.notifications[0]?.id ?? ""])).toEqual({ marked: 0 });
  });
});
