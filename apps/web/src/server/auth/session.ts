// Server-side sessions. The cookie carries 32 random bytes (base64url); the sessions table keeps
// only their sha256, with an absolute expiry. Logout deletes the row, so a copied cookie dies with it.
//
// The cookie is `__Host-keyflow_session; Path=/; HttpOnly; Secure; SameSite=Lax`. `__Host-` forces
// Secure, Path=/ and no Domain, and Secure is kept even on plain http: browsers treat loopback
// (http://localhost and http://127.0.0.1) as a secure context and accept Secure cookies there
// (verified in Debian's Chromium on both, and by e2e/auth.e2e.test.ts on 127.0.0.1), so nothing is
// weakened for development or the e2e tests. Anything else must be served over https.
import { randomBytes } from "node:crypto";
import { sha256Hex, type PrismaClient } from "@keyflow/db";
import type { SessionUser } from "./roles";

export const SESSION_COOKIE = "__Host-keyflow_session";
/** Twelve hours: a working day, after which the person signs in again. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export function newSessionToken(): string {
  return randomBytes(32).toString("base64url");
}

export function hashSessionToken(token: string): string {
  return sha256Hex(token);
}

export async function createSession(prisma: PrismaClient, userId: string, now: Date = new Date()): Promise<{ token: string; expiresAt: Date }> {
  const token = newSessionToken();
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  await prisma.session.create({ data: { tokenHash: hashSessionToken(token), userId, expiresAt } });
  return { token, expiresAt };
}

/** The session's user, or null when the token is unknown or expired (an expired row is removed). */
export async function resolveSession(prisma: PrismaClient, token: string, now: Date = new Date()): Promise<SessionUser | null> {
  const session = await prisma.session.findUnique({
    where: { tokenHash: hashSessionToken(token) },
    select: { id: true, expiresAt: true, user: { select: { id: true, email: true, name: true, role: true } } },
  });
  if (!session) return null;
  if (session.expiresAt.getTime() <= now.getTime()) {
    await prisma.session.deleteMany({ where: { id: session.id } });
    return null;
  }
  return session.user;
}

export async function deleteSession(prisma: PrismaClient, token: string): Promise<SessionUser | null> {
  const session = await prisma.session.findUnique({
    where: { tokenHash: hashSessionToken(token) },
    select: { id: true, user: { select: { id: true, email: true, name: true, role: true } } },
  });
  if (!session) return null;
  await prisma.session.deleteMany({ where: { id: session.id } });
  return session.user;
}

/** The value of our cookie in a Cookie header, if any. */
export function sessionTokenFrom(cookieHeader: string | null): string | null {
  if (!cookieHeader) return null;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return value.length > 0 ? value : null;
    }
  }
  return null;
}

export function sessionCookie(token: string, expiresAt: Date, now: Date = new Date()): string {
  const maxAge = Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=${maxAge}`;
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0`;
}
