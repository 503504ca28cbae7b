// tRPC setup: context, error shape, procedure builders. Routers live in ./routers, one per area.
import { initTRPC } from "@trpc/server";
import superjson from "superjson";
import { z } from "zod";
import type { Db } from "@keyflow/db";
import { getDb } from "./db";
import { serverEnv, type ServerEnv } from "./env";
import { PipelineRejectedError, type PipelineIssue } from "./errors";

export interface Context {
  /** Opens (and migrates) the database on first use: procedures that need none never touch it. */
  db: () => Promise<Db>;
  env: ServerEnv;
  /** Who is acting: recorded as a version's author. A header until sign-in exists. */
  actor: string;
}

export const ACTOR_HEADER = "x-keyflow-actor";
const DEFAULT_ACTOR = "analyst";

export function createContext(opts: { headers: Headers }, overrides: Partial<Context> = {}): Context {
  const actor = opts.headers.get(ACTOR_HEADER)?.trim() || DEFAULT_ACTOR;
  return { db: getDb, env: serverEnv(), actor, ...overrides };
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
