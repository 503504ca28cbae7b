// tRPC setup: context, error shape, procedure builders. Routers live in ./routers, one per area.
//
// Every procedure goes through one of the builders below, which check on the server who is asking:
// `authedProcedure` (any signed-in user: queries), `analystProcedure` (authoring, versions, shadow
// deploys), `approverProcedure` (approvals), `adminProcedure` (users and roles). Roles are ordered
// (auth/roles.ts). `publicProcedure` is kept for nothing that reads or changes data.
// The content-type and CSRF-header rule for mutations is enforced before tRPC, in the route handler
// (auth/csrf.ts), so it also covers batches and malformed calls.
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { z } from "zod";
import { appendAuditEvent, type AuditInput, type Db, type Prisma, type UserRole } from "@keyflow/db";
import { serviceUser } from "./auth/bootstrap";
import { hasRole, type SessionUser } from "./auth/roles";
import { resolveSession, sessionTokenFrom } from "./auth/session";
import { getDb } from "./db";
import { authEnv, serverEnv, type ServerEnv } from "./env";
import { PipelineRejectedError, type PipelineIssue } from "./errors";

export interface Context {
  /** Opens (and migrates) the database on first use: procedures that need none never touch it. */
  db: () => Promise<Db>;
  env: ServerEnv;
  /** Who is asking: the session cookie's user, or the service user of `npm start`; null = nobody. Resolved once, on first use. */
  session: () => Promise<SessionUser | null>;
  /** The session cookie's token, when the request carried one (to end a person's other sessions). */
  sessionToken: string | null;
}

function memo<T>(f: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= f());
}

export function createContext(opts: { headers: Headers }, overrides: Partial<Context> = {}): Context {
  const db = overrides.db ?? getDb;
  const token = sessionTokenFrom(opts.headers.get("cookie"));
  const authorization = opts.headers.get("authorization");
  const session = memo(async (): Promise<SessionUser | null> => {
    if (token) return resolveSession((await db()).prisma, token);
    if (authorization) return serviceUser((await db()).prisma, authEnv(), authorization);
    return null;
  });
  return { db, env: serverEnv(), session, sessionToken: token, ...overrides };
}

export interface InputIssue {
  /** Dotted path into the input, e.g. `graph.nodes.2.id`. */
  path: string;
  message: string;
}

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const inputIssues: InputIssue[] | null =
      cause instanceof z.ZodError ? cause.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })) : null;
    const pipelineIssues: readonly PipelineIssue[] | null = cause instanceof PipelineRejectedError ? cause.issues : null;
    return { ...shape, data: { ...shape.data, inputIssues, pipelineIssues } };
  },
});

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure;

/**
 * Records an audit event as the signed-in user (who and when are filled in). Given the transaction
 * of the change it records (`prisma.$transaction(async (tx) => …)`), both commit or neither does.
 */
export type AuditRecorder = (event: Omit<AuditInput, "actor">, tx?: Prisma.TransactionClient) => Promise<void>;

function requireRole(needed: UserRole | null) {
  return t.middleware(async ({ ctx, next, path }) => {
    const user = await ctx.session();
    if (!user) throw new TRPCError({ code: "UNAUTHORIZED", message: `${path}: sign in first` });
    if (needed !== null && !hasRole(user.role, needed)) {
      throw new TRPCError({ code: "FORBIDDEN", message: `${path} needs the ${needed} role; ${user.email} is an ${user.role}` });
    }
    const audit: AuditRecorder = async (event, tx) => {
      await appendAuditEvent(tx ?? (await ctx.db()).prisma, { ...event, actor: user.email });
    };
    return next({ ctx: { user, audit } });
  });
}

/** Any signed-in user: every query. */
export const authedProcedure = t.procedure.use(requireRole(null));
/** Authors: create and edit pipelines, save versions, deploy to shadow, dry runs. */
export const analystProcedure = t.procedure.use(requireRole("analyst"));
/** Approves or rejects promotions (never their own change: checked by the procedure). */
export const approverProcedure = t.procedure.use(requireRole("approver"));
/** Users and roles. */
export const adminProcedure = t.procedure.use(requireRole("admin"));
