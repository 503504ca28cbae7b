// Sign-in throttling: growing delays per client address and per account, counted in the database
// (one atomic upsert per attempt, before its password is checked), so they hold across server
// processes and restarts and 100 parallel guesses cannot all be evaluated.
//
// What keys the delay, and why a stranger cannot lock a real user out:
// - Per client address: after ADDRESS_FREE_FAILURES failures from one address (whatever the
//   accounts), each further attempt waits a delay that doubles, up to MAX_DELAY_S. This is what
//   stops a guesser, and it is theirs alone.
// - Per account: after ACCOUNT_FREE_FAILURES failures on one account (whatever the addresses), the
//   same growing delay, against guessers spread over many addresses. A stranger can trigger it, so it
//   does not apply from an address the account has signed in from before (sign_in_addresses): the
//   owner at their usual place gets in, limited only by that address's own delay. From a new place,
//   the owner waits the account's delay like anyone else; it is bounded (MAX_DELAY_S), never a lock.
// The client address is the socket's, stamped by the web server's front (scripts/http-server.ts),
// which drops any value a client sent; behind `next dev` there is none and every attempt shares one.
import { Prisma, type PrismaClient } from "@keyflow/db";
export const ADDRESS_FREE_FAILURES = 10;
export const ACCOUNT_FREE_FAILURES = 10;
/** The first delay once the free failures are used up; each further failure doubles it. */
export const FIRST_DELAY_S = 30;
export const MAX_DELAY_S = 15 * 60;
/** Failures older than this (with no attempt since) are forgotten. */
export const FAILURE_WINDOW_S = 15 * 60;

export type Reservation = { admitted: true } | { admitted: false; retryAfterS: number };

/**
 * Counts one attempt on `key` as a failure until it proves otherwise, in one statement: the row's
 * lock orders concurrent attempts, each seeing the ones before it. Refused (not counted) while the
 * key's delay runs; the attempt that uses up the free failures, and each one after, starts a delay.
 */
export async function reserveAttempt(prisma: PrismaClient, key: string, freeFailures: number): Promise<Reservation> {
  const blocked = Prisma.sql`(t.blocked_until IS NOT NULL AND t.blocked_until > now())`;
  const next = Prisma.sql`(CASE WHEN t.updated_at < now() - make_interval(secs => ${FAILURE_WINDOW_S}::int) THEN 1 ELSE t.failures + 1 END)`;
  const delayAfter = (failures: Prisma.Sql) =>
    Prisma.sql`CASE WHEN ${failures} >= ${freeFailures}::int THEN now() + make_interval(secs => least(${FIRST_DELAY_S}::float8 * power(2, ${failures} - ${freeFailures}::int), ${MAX_DELAY_S}::float8)) END`;
  const rows = await prisma.$queryRaw<{ last_refused: boolean; blocked_until: Date | null }[]>`
    INSERT INTO sign_in_throttles AS t (key, failures, blocked_until, last_refused, updated_at)
    VALUES (${key}, 1, ${delayAfter(Prisma.sql`1`)}, false, now())
    ON CONFLICT (key) DO UPDATE SET
      last_refused = ${blocked},
      failures = CASE WHEN ${blocked} THEN t.failures ELSE ${next} END,
      blocked_until = CASE WHEN ${blocked} THEN t.blocked_until ELSE ${delayAfter(next)} END,
      updated_at = CASE WHEN ${blocked} THEN t.updated_at ELSE now() END
    RETURNING last_refused, blocked_until`;
  const row = rows[0];
  if (!row?.last_refused) return { admitted: true };
  return { admitted: false, retryAfterS: Math.max(1, Math.ceil(((row.blocked_until?.getTime() ?? Date.now()) - Date.now()) / 1000)) };
}

export const addressKey = (address: string) => `address:${address}`;
export const accountKey = (email: string) => `account:${email}`;

export async function knownAddress(prisma: PrismaClient, email: string, address: string): Promise<boolean> {
  return (await prisma.signInAddress.count({ where: { email, address } })) > 0;
}

/**
 * After a correct password: the address's count is cleared and the address becomes one the account
 * signs in from. The account's count is cleared too unless its delay is running (a stranger's
 * doing, which the owner's sign-in must not lift).
 */
export async function recordSuccess(prisma: PrismaClient, email: string, address: string): Promise<void> {
  await prisma.signInThrottle.deleteMany({ where: { key: addressKey(address) } });
  await prisma.signInThrottle.deleteMany({ where: { key: accountKey(email), OR: [{ blockedUntil: null }, { blockedUntil: { lte: new Date() } }] } });
  await prisma.signInAddress.upsert({ where: { email_address: { email, address } }, create: { email, address }, update: { lastSuccessAt: new Date() } });
}
