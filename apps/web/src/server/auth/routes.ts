// Sign-in and sign-out as plain route handlers (they set and clear the session cookie, which tRPC
// procedures do not do). Both go through the same content-type and CSRF-header guard as mutations.
import { z } from "zod";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import { refuseUnsafeRequest } from "./csrf";
import { hashPassword, verifyPassword } from "./password";
import { clearedSessionCookie, createSession, deleteSession, sessionCookie, sessionTokenFrom } from "./session";

const loginBody = z.object({ email: z.string().trim().toLowerCase().min(1).max(320), password: z.string().min(1).max(1_000) });

/** Failed sign-ins for one email within the window before further attempts are refused (429). */
export const MAX_FAILED_LOGINS = 10;
export const FAILED_LOGIN_WINDOW_MS = 15 * 60 * 1000;

/** A real argon2 hash of nothing anyone knows: unknown emails cost the same time as wrong passwords. */
let decoy: Promise<string> | undefined;

export async function login(req: Request, prisma: () => Promise<PrismaClient>): Promise<Response> {
  const refused = refuseUnsafeRequest(req);
  if (refused) return refused;
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return Response.json({ error: { message: "the body is not JSON" } }, { status: 400 });
  }
  const parsed = loginBody.safeParse(body);
  if (!parsed.success) return Response.json({ error: { message: `login: ${z.prettifyError(parsed.error)}` } }, { status: 400 });
  const db = await prisma();
  // Password guessing: counted from the audit trail, so every server process sees the same count.
  const recentFailures = await db.auditEvent.count({ where: { action: "login_failed", subjectType: "session", subjectId: parsed.data.email, at: { gte: new Date(Date.now() - FAILED_LOGIN_WINDOW_MS) } } });
  if (recentFailures >= MAX_FAILED_LOGINS) {
    return Response.json({ error: { message: `too many failed sign-ins for ${parsed.data.email}; try again in 15 minutes` } }, { status: 429, headers: { "retry-after": String(FAILED_LOGIN_WINDOW_MS / 1000) } });
  }
  const user = await db.user.findUnique({ where: { email: parsed.data.email }, select: { id: true, email: true, name: true, role: true, passwordHash: true } });
  const ok = await verifyPassword(user?.passwordHash ?? (await (decoy ??= hashPassword("keyflow-decoy"))), parsed.data.password);
  if (!user || !ok) {
    await appendAuditEvent(db, { actor: parsed.data.email, action: "login_failed", subjectType: "session", subjectId: parsed.data.email, details: { knownUser: Boolean(user) } });
    return Response.json({ error: { message: "wrong email or password" } }, { status: 401 });
  }
  const now = new Date();
  const session = await createSession(db, user.id, now);
  await appendAuditEvent(db, { actor: user.email, action: "login", subjectType: "user", subjectId: user.id, details: { role: user.role } });
  return Response.json(
    { user: { id: user.id, email: user.email, name: user.name, role: user.role } },
    { status: 200, headers: { "set-cookie": sessionCookie(session.token, session.expiresAt, now), "cache-control": "no-store" } },
  );
}

export async function logout(req: Request, prisma: () => Promise<PrismaClient>): Promise<Response> {
  const refused = refuseUnsafeRequest(req);
  if (refused) return refused;
  const token = sessionTokenFrom(req.headers.get("cookie"));
  if (token) {
    const db = await prisma();
    const user = await deleteSession(db, token);
    if (user) await appendAuditEvent(db, { actor: user.email, action: "logout", subjectType: "user", subjectId: user.id });
  }
  return Response.json({ ok: true }, { headers: { "set-cookie": clearedSessionCookie(), "cache-control": "no-store" } });
}
