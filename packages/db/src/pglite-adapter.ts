// A Prisma 6.19 driver adapter for PGlite: pglite-prisma-adapter 0.6.1, patched where it lags behind.
//
// pglite-prisma-adapter 0.6.1 was written against @prisma/driver-adapter-utils 6.10. With the 6.19
// client it runs, but:
//   1. database errors reach Prisma as the generic {kind:"postgres"} without `originalCode` /
//      `originalMessage`, so a unique violation is not P2002 and raw-query errors read
//      "Code: N/A. Message: undefined". We map them the way @prisma/adapter-pg 6.19 does, so code
//      that checks `err.code === "P2002"` behaves the same on PGlite and on a real server;
//   2. Bytes arguments arrive as base64 strings (6.19) and would be stored as text: we decode them;
//   3. executeScript() does not await PGlite's exec (errors escape as unhandled rejections), and
//      parameterless executeRaw() (how the schema engine sends whole migration scripts) uses the
//      extended protocol, which refuses several statements: both now use PGlite's exec();
//   4. startTransaction(isolationLevel) runs SET TRANSACTION outside the transaction. PGlite has a
//      single connection and runs one transaction at a time, so every transaction is serializable
//      anyway: the level is ignored.
import type { PGlite, Transaction } from "@electric-sql/pglite";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";

interface ArgType {
  scalarType?: string;
  dbType?: string;
  arity?: "scalar" | "list";
}
interface SqlQuery {
  sql: string;
  args: unknown[];
  argTypes: (ArgType | string | undefined)[];
}
interface PgErrorPayload {
  kind: string;
  code?: string;
  severity?: string;
  message?: string;
  detail?: string;
  column?: string;
  hint?: string;
}
type Fn = (...args: unknown[]) => Promise<unknown>;

function fieldsFromDetail(detail: string | undefined): { fields: string[] } | undefined {
  const fields = detail?.match(/Key \(([^)]+)\)/)?.[1]?.split(", ");
  return fields ? { fields } : undefined;
}

/** The same mapping as @prisma/adapter-pg 6.19's convertDriverError for server errors. */
function mapPgError(p: PgErrorPayload & { code: string }): Record<string, unknown> {
  switch (p.code) {
    case "22001":
      return { kind: "LengthMismatch", column: p.column };
    case "22003":
      return { kind: "ValueOutOfRange", cause: p.message };
    case "23505":
      return { kind: "UniqueConstraintViolation", constraint: fieldsFromDetail(p.detail) };
    case "23502":
      return { kind: "NullConstraintViolation", constraint: fieldsFromDetail(p.detail) };
    case "23503":
      return { kind: "ForeignKeyConstraintViolation", constraint: p.column ? { fields: [p.column] } : undefined };
    case "40001":
      return { kind: "TransactionWriteConflict" };
    case "42P01":
      return { kind: "TableDoesNotExist", table: p.message?.split(" ")[1]?.split('"')[1] };
    case "42703":
      return { kind: "ColumnNotFound", column: p.message?.split(" ")[1]?.split('"')[1] };
    default:
      return {
        kind: "postgres",
        code: p.code,
        severity: p.severity ?? "N/A",
        message: p.message,
        detail: p.detail,
        column: p.column,
        hint: p.hint,
      };
  }
}

function convertError(error: unknown): unknown {
  if (error instanceof Error && error.name === "DriverAdapterError" && typeof error.cause === "object" && error.cause) {
    const cause = error.cause as PgErrorPayload;
    if (cause.kind === "postgres" && typeof cause.code === "string") {
      // Prisma recognises adapter errors by name + cause (isDriverAdapterError); keep the object.
      error.cause = { originalCode: cause.code, originalMessage: cause.message, ...mapPgError({ ...cause, code: cause.code }) };
    }
  }
  return error;
}

function mapArg(arg: unknown, type: ArgType | string | undefined): unknown {
  if (arg === null || arg === undefined || typeof type !== "object") return arg;
  if (Array.isArray(arg) && type.arity === "list") return arg.map((v) => mapArg(v, type));
  if (type.scalarType === "bytes") {
    if (typeof arg === "string") return Buffer.from(arg, "base64");
    if (Array.isArray(arg)) return Buffer.from(arg as number[]);
  }
  return arg;
}

function fixQuery(query: SqlQuery): SqlQuery {
  return { ...query, args: query.args.map((arg, i) => mapArg(arg, query.argTypes[i])) };
}

async function runQuery(fn: Fn, target: object, query: SqlQuery): Promise<unknown> {
  try {
    return await fn.call(target, fixQuery(query));
  } catch (err) {
    throw convertError(err);
  }
}

/** The inner adapter's DriverAdapterError for a raw PGlite error (its onError always throws). */
function innerError(target: object, err: unknown): unknown {
  try {
    (target as { onError(e: unknown): never }).onError(err);
  } catch (wrapped) {
    return wrapped;
  }
  return err;
}

function wrap<T extends object>(queryable: T, pglite: PGlite): T {
  return new Proxy(queryable, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      const fn = value as Fn;
      switch (prop) {
        case "executeRaw":
          return async (query: SqlQuery) => {
            if (query.args.length > 0) return runQuery(fn, target, query);
            // Without parameters, run it as a simple query (like node-pg does): Prisma's schema
            // engine sends whole migration scripts this way, e.g. to the shadow database of
            // `prisma migrate diff --from-migrations`, and the extended protocol refuses them.
            const client = (target as unknown as { client: PGlite | Transaction }).client;
            try {
              const results = await client.exec(query.sql);
              return results.reduce((sum, r) => sum + (r.affectedRows ?? 0), 0);
            } catch (err) {
              throw convertError(innerError(target, err));
            }
          };
        case "queryRaw":
          return (query: SqlQuery) => runQuery(fn, target, query);
        case "startTransaction":
          return async () => {
            try {
              return wrap((await fn.call(target)) as object, pglite);
            } catch (err) {
              throw convertError(err);
            }
          };
        case "executeScript":
          return async (script: string) => {
            try {
              await pglite.exec(script);
            } catch (err) {
              throw convertError(innerError(target, err));
            }
          };
        default:
          return fn.bind(target);
      }
    },
  });
}

/**
 * The driver adapter factory for a PGlite instance: give it to PrismaClient ({ adapter }) or return
 * it from prisma.config.ts. (The casts bridge pglite-prisma-adapter's 6.10 typings.)
 */
export function createPGliteAdapter(pglite: PGlite): SqlMigrationAwareDriverAdapterFactory {
  const inner = new PrismaPGlite(pglite);
  return {
    provider: "postgres",
    adapterName: inner.adapterName,
    connect: async () => wrap(await inner.connect(), pglite) as unknown as SqlDriverAdapter,
    connectToShadowDb: async () => {
      const shadow = await inner.connectToShadowDb();
      return wrap(shadow, (shadow as unknown as { client: PGlite }).client) as unknown as SqlDriverAdapter;
    },
  };
}
