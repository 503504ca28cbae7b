// Every procedure of the API refuses a caller without a session, and every mutation needs more
// than a session (a role): checked over the router's own list of procedures, so a procedure added
// later with the wrong builder fails here.
import { describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { appRouter, createCaller } from "../root";
import { createContext } from "../trpc";
import { asUser } from "./test-user";

type Callable = (input?: unknown) => Promise<unknown>;

// At run time tRPC keeps the procedures flat, by dotted path.
const flat: Record<string, unknown> = appRouter._def.procedures;
const procedures = Object.keys(flat).map((path) => ({ path }));

function callerAt(caller: object, path: string): Callable {
  let target: unknown = caller;
  for (const part of path.split(".")) target = (target as Record<string, unknown>)[part];
  return target as Callable;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    const result = await promise;
    // A subscription hands back an iterable; its first step runs the middlewares.
    if (result && typeof result === "object" && Symbol.asyncIterator in result) await (result as AsyncIterable<unknown>)[Symbol.asyncIterator]().next();
    return "OK";
  } catch (error) {
    return error instanceof TRPCError ? error.code : String(error);
  }
}

const noDb = async () => {
  throw new Error("the role check must come before any database access");
};

describe("every procedure checks who is asking", () => {
  it("lists the API's procedures", () => {
    expect(procedures.length).toBeGreaterThan(15);
  });

  it.each(procedures)("$path answers UNAUTHORIZED without a session", async ({ path }) => {
    const anonymous = createCaller(createContext({ headers: new Headers() }, { db: noDb }));
    expect(await codeOf(callerAt(anonymous, path)(undefined))).toBe("UNAUTHORIZED");
  });

  it("keeps users and roles to admins, approvals to approvers", async () => {
    const analyst = createCaller(createContext({ headers: new Headers() }, { db: noDb, ...asUser("ada@bank.test", "analyst") }));
    const approver = createCaller(createContext({ headers: new Headers() }, { db: noDb, ...asUser("pat@bank.test", "approver") }));
    for (const path of ["users.list", "users.create", "users.setRole", "promotion.approve", "promotion.reject"]) expect({ path, code: await codeOf(callerAt(analyst, path)({})) }).toEqual({ path, code: "FORBIDDEN" });
    for (const path of ["users.list", "users.create", "users.setRole"]) expect({ path, code: await codeOf(callerAt(approver, path)({})) }).toEqual({ path, code: "FORBIDDEN" });
  });
});
