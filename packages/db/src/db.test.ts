// @keyflow/db against an embedded, in-memory PGlite (no server needed).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createDb, migrate, parseDatabaseUrl } from "./index";
import { defineDbSuite } from "./db.suite";

defineDbSuite("PGlite (memory)", {
  open: () => createDb({ dataDir: ":memory:", databaseUrl: "" }),
  dispose: (db) => db.close(),
});

describe("createDb", () => {
  it("uses PGlite when no URL is given, even with DATABASE_URL unset", async () => {
    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      const db = createDb({ dataDir: ":memory:" });
      expect(db.kind).toBe("pglite");
      expect(await db.prisma.$queryRawUnsafe<{ one: number }[]>("SELECT 1 AS one")).toEqual([{ one: 1 }]);
      await db.close();
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved;
    }
  });

  it("uses PGlite when a dataDir is given, even with DATABASE_URL set", async () => {
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = "postgres://u:p@127.0.0.1:1/nowhere";
    try {
      const db = createDb({ dataDir: ":memory:" });
      expect(db.kind).toBe("pglite");
      await db.close();
      const viaEnv = createDb();
      expect(viaEnv.kind).toBe("postgres");
      await viaEnv.close();
    } finally {
      if (saved === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = saved;
    }
  });

  it("persists a PGlite directory across close/open", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-pglite-"));
    try {
      const nested = path.join(dir, "a", "b"); // created on demand
      const first = createDb({ dataDir: nested });
      expect((await migrate(first)).applied.length).toBeGreaterThan(0);
      await first.prisma.pipeline.create({ data: { name: "kept", draft: { v: 1 } } });
      await first.close();
      const second = createDb({ dataDir: nested });
      expect((await migrate(second)).applied).toEqual([]);
      expect((await second.prisma.pipeline.findUniqueOrThrow({ where: { name: "kept" } })).draft).toEqual({ v: 1 });
      await second.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("uses PostgreSQL when a URL is given (no connection until the first query)", async () => {
    const db = createDb({ databaseUrl: "postgres://u:p@127.0.0.1:1/keyflow?schema=kf_test" });
    expect(db.kind).toBe("postgres");
    expect(db.driver.kind === "postgres" && db.driver.schema).toBe("kf_test");
    await db.close();
  });

  it("splits Prisma's ?schema= off the URL", () => {
    expect(parseDatabaseUrl("postgresql://u:p@h:5/db?schema=s1&sslmode=disable")).toEqual({
      connectionString: "postgresql://u:p@h:5/db?sslmode=disable",
      schema: "s1",
    });
    expect(parseDatabaseUrl("postgres://h/db").schema).toBeNull();
    expect(() => parseDatabaseUrl("postgres://h/db?schema=a;drop")).toThrow(/schema/);
    expect(() => parseDatabaseUrl("mysql://h/db")).toThrow(/postgres/);
  });
});
