// Sign-in and sign-out as plain route handlers (they set and clear the session cookie, which tRPC
// procedures do not do). Both go through the same content-type and CSRF-header guard as mutations,
// read a small capped body, and sign-in attempts pass the throttle (./throttle.ts) first.
import { z } from "zod";
import { appendAuditEvent, type PrismaClient } from "@keyflow/db";
import { AUTH_BODY_LIMIT, readJsonCapped } from "../http/body-limit";
import { refuseUnsafeRequest } from "./csrf";
import { hashPassword, verifyPassword } from "./password";
import { clearedSessionCookie, createSession, deleteSession, sessionCookie, sessionTokenFrom } from "./session";
import { clientAddress } from "../http/client-address";
import { ACCOUNT_FREE_FAILURES, accountKey, ADDRESS_FREE_FAILURES, addressKey, knownAddress, recordSuccess, reserveAttempt } from "./throttle";

const loginBody = z.object({ email: z.string().trim().toLowerCase().min(1).max(320), password: z.string().min(1).max(1_000) });

/** A real argon2 hash of nothing anyone knows: unknown emails cost the same time as wrong passwords. */
let decoy: Promise<string> | undefined;

export async function login(req: Request, prisma: () => Promise<PrismaClient>): Promise<Response> {
  const refused = refuseUnsafeRequest(req);
  if (refused) return refused;
  const body = await readJsonCapped(req, AUTH_BODY_LIMIT);
  if (!body.ok) return body.response;
  const parsed = loginBody.safeParse(body.value);
  if (!parsed.success) return Response.json({ error: { message: `login: ${z.prettifyError(parsed.error)}` } }, { status: 400 });
  const db = await prisma();
  const { email } = parsed.data;
  // Counted before the password is checked: a refused attempt is never evaluated.
  const address = clientAddress(req.headers);
  const slowed = (retryAfterS: number) => Response.json({ error: { message: `too many failed sign-ins; try again in ${retryAfterS} s` } }, { status: 429, headers: { "retry-after": String(retryAfterS) } });
  const byAddress = await reserveAttempt(db, addressKey(address), ADDRESS_FREE_FAILURES);
  if (!byAddress.admitted) return slowed(byAddress.retryAfterS);
  if (!(await knownAddress(db, email, address))) {
    const byAccount = await reserveAttempt(db, accountKey(email), ACCOUNT_FREE_FAILURES);
    if (!byAccount.admitted) return slowed(byAccount.retryAfterS);
  }
  const user = await db.user.findUnique({ where: { email: parsed.data.email }, select: { id: true, email: true, name: true, role: true, passwordHash: true } });
  const ok = await verifyPassword(user?.passwordHash ?? (await (decoy ??= hashPassword("keyflow-decoy"))), parsed.data.password);
  if (!user || !ok) {
    await appendAuditEvent(db, { actor: parsed.data.email, action: "login_failed", subjectType: "session", subjectId: parsed.data.email, details: { knownUser: Boolean(user) } });
    return Response.json({ error: { message: "wrong email or password" } }, { status: 401 });
  }
  await recordSuccess(db, email, address);
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
