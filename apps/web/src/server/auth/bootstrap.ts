// Accounts that exist without anyone creating them: the first admin (when there are no users at
// all) and the service user that `npm start` seeds and deploys as.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { appendAuditEvent, Prisma, type PrismaClient } from "@keyflow/db";
import type { AuthEnv } from "../env";
import { hashPassword } from "./password";
import type { SessionUser } from "./roles";

export const SERVICE_USER_EMAIL = "npm-start@keyflow.local";

/**
 * Creates the first admin when the users table is empty. Without KEYFLOW_ADMIN_PASSWORD a password
 * is generated and printed once (it is stored only as its argon2 hash, so it cannot be shown again).
 */
export async function ensureFirstAdmin(prisma: PrismaClient, env: AuthEnv, print: (line: string) => void = console.log): Promise<boolean> {
  if ((await prisma.user.count()) > 0) return false;
  const generated = env.adminPassword === undefined;
  const password = env.adminPassword ?? randomBytes(18).toString("base64url");
  try {
    const passwordHash = await hashPassword(password);
    // The account and its audit record commit together.
    await prisma.$transaction(async (tx) => {
      const user = await tx.user.create({ data: { email: env.adminEmail, name: env.adminName, role: "admin", passwordHash } });
      await appendAuditEvent(tx, { actor: "setup", action: "user_create", subjectType: "user", subjectId: user.id, details: { email: user.email, role: "admin", firstAdmin: true } });
    });
  } catch (error) {
    // Another process created it at the same moment.
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") return false;
    throw error;
  }
  if (generated) {
    print("");
    print("Keyflow: created the first admin account (shown once, it is stored only as a hash):");
    print(`  email:    ${env.adminEmail}`);
    print(`  password: ${password}`);
    print("Sign in and create the other accounts under Users. Set KEYFLOW_ADMIN_PASSWORD to choose it instead.");
    print("");
  } else {
    print(`Keyflow: created the first admin account ${env.adminEmail} (password from KEYFLOW_ADMIN_PASSWORD)`);
  }
  return true;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `Authorization: Bearer <KEYFLOW_SERVICE_TOKEN>` → the service user (an analyst), created on first use. */
export async function serviceUser(prisma: PrismaClient, env: AuthEnv, authorization: string | null): Promise<SessionUser | null> {
  if (!env.serviceToken || !authorization?.startsWith("Bearer ")) return null;
  if (!sameSecret(authorization.slice("Bearer ".length).trim(), env.serviceToken)) return null;
  const select = { id: true, email: true, name: true, role: true } as const;
  // "!" is no argon2 hash: nobody can sign in as the service user with a password.
  return prisma.user.upsert({ where: { email: SERVICE_USER_EMAIL }, create: { email: SERVICE_USER_EMAIL, name: "npm start", role: "analyst", passwordHash: "!" }, update: {}, select });
}
