// People: who am I (any signed-in user), and for admins the list of accounts, new accounts and role
// changes. Role changes are audited with the old and the new role.
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { Prisma, type UserRole } from "@keyflow/db";
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from "../auth/password";
import { hashSessionToken } from "../auth/session";
import { notFound } from "../errors";
import { adminProcedure, authedProcedure, createTRPCRouter } from "../trpc";

const role = z.enum(["analyst", "approver", "admin"]) satisfies z.ZodType<UserRole>;
const email = z.string().trim().toLowerCase().pipe(z.email());
const newPassword = z.string().min(MIN_PASSWORD_LENGTH, `a password has at least ${MIN_PASSWORD_LENGTH} characters`).max(1_000);
const publicUser = { id: true, email: true, name: true, role: true, createdAt: true } as const;

export const usersRouter = createTRPCRouter({
  me: authedProcedure.query(({ ctx }) => ctx.user),

  list: adminProcedure.query(async ({ ctx }) => (await ctx.db()).prisma.user.findMany({ orderBy: { email: "asc" }, select: publicUser })),

  create: adminProcedure
    .input(z.object({ email, name: z.string().trim().min(1).max(200), role, password: newPassword }))
    .mutation(async ({ ctx, input }) => {
      const prisma = (await ctx.db()).prisma;
      try {
        const passwordHash = await hashPassword(input.password);
        // The account and its audit record commit together (so for every change below).
        return await prisma.$transaction(async (tx) => {
          const user = await tx.user.create({ data: { email: input.email, name: input.name, role: input.role, passwordHash }, select: publicUser });
          await ctx.audit({ action: "user_create", subjectType: "user", subjectId: user.id, details: { email: user.email, name: user.name, role: user.role } }, tx);
          return user;
        });
      } catch (error) {
        if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") throw new TRPCError({ code: "CONFLICT", message: `a user with email ${input.email} already exists` });
        throw error;
      }
    }),

  /** Your own password (the current one first). Your other sessions end; this one stays. */
  changePassword: authedProcedure.input(z.object({ currentPassword: z.string().min(1).max(1_000), newPassword })).mutation(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    const row = await prisma.user.findUnique({ where: { id: ctx.user.id }, select: { passwordHash: true } });
    if (!row || !(await verifyPassword(row.passwordHash, input.currentPassword))) throw new TRPCError({ code: "FORBIDDEN", message: "the current password is wrong" });
    const passwordHash = await hashPassword(input.newPassword);
    const sessionsEnded = await prisma.$transaction(async (tx) => {
      await tx.user.update({ where: { id: ctx.user.id }, data: { passwordHash } });
      const ended = await tx.session.deleteMany({ where: { userId: ctx.user.id, ...(ctx.sessionToken ? { tokenHash: { not: hashSessionToken(ctx.sessionToken) } } : {}) } });
      await ctx.audit({ action: "password_change", subjectType: "user", subjectId: ctx.user.id, details: { email: ctx.user.email, by: "self", sessionsEnded: ended.count } }, tx);
      return ended.count;
    });
    return { ok: true, sessionsEnded };
  }),

  /** An admin sets someone's password (a forgotten one): every session of theirs ends. */
  setPassword: adminProcedure.input(z.object({ userId: z.string().min(1), newPassword, reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    const user = await prisma.user.findUnique({ where: { id: input.userId }, select: { id: true, email: true } });
    if (!user) throw notFound("user", input.userId);
    const passwordHash = await hashPassword(input.newPassword);
    const sessionsEnded = await prisma.$transaction(async (tx) => {
      await tx.user.update({ where: { id: user.id }, data: { passwordHash } });
      const ended = await tx.session.deleteMany({ where: { userId: user.id } });
      await ctx.audit({ action: "password_change", subjectType: "user", subjectId: user.id, details: { email: user.email, by: "admin", sessionsEnded: ended.count }, reason: input.reason ?? null }, tx);
      return ended.count;
    });
    return { ok: true, sessionsEnded };
  }),

  setRole: adminProcedure.input(z.object({ userId: z.string().min(1), role, reason: z.string().trim().max(2_000).optional() })).mutation(async ({ ctx, input }) => {
    const prisma = (await ctx.db()).prisma;
    return prisma.$transaction(async (tx) => {
      // The admins' rows are locked: two admins demoting each other at once cannot leave none.
      const admins = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM users WHERE role = 'admin' FOR UPDATE`;
      const before = await tx.user.findUnique({ where: { id: input.userId }, select: { email: true, role: true } });
      if (!before) throw notFound("user", input.userId);
      // The last admin cannot step down: nobody could manage accounts afterwards.
      if (before.role === "admin" && input.role !== "admin" && admins.length <= 1) {
        throw new TRPCError({ code: "PRECONDITION_FAILED", message: `${before.email} is the only admin; make someone else admin first` });
      }
      const user = await tx.user.update({ where: { id: input.userId }, data: { role: input.role }, select: publicUser });
      await ctx.audit({ action: "role_change", subjectType: "user", subjectId: user.id, details: { email: user.email, before: before.role, after: user.role }, reason: input.reason ?? null }, tx);
      return user;
    });
  }),
});
