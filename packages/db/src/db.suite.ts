// The database test suite, run against PGlite (db.test.ts) and a real PostgreSQL (db.int.test.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, MigrationError, migrate, Prisma } from "./index";
import { defaultMigrationsDir, repoRoot } from "./paths";
import { readMigrations, sha256Hex } from "./migrate";

export interface SuiteTarget {
  /** A fresh, empty, isolated database (nothing migrated yet). */
  open(): Db | Promise<Db>;
  /** Drops what open() created and closes it. */
  dispose(db: Db): Promise<void>;
}

const graph = (label: string) => ({
  apiVersion: "keyflow.pipeline/v1",
  name: label,
  nodes: [{ id: "src", type: "source", config: { topic: "tx" } }],
  edges: [],
});

/** Copies the committed migrations into a temp folder that a test may then tamper with. */
function copyMigrations(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyflow-migrations-"));
  fs.cpSync(defaultMigrationsDir(), dir, { recursive: true });
  return dir;
}

async function expectRejects(promise: Promise<unknown>, pattern: RegExp): Promise<Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "expected the operation to be refused").toBeInstanceOf(Error);
  expect(String((err as Error).message)).toMatch(pattern);
  return err as Error;
}

export function defineDbSuite(label: string, target: SuiteTarget): void {
  describe(`@keyflow/db on ${label}`, () => {
    let db: Db;
    const committed = readMigrations();

    beforeAll(async () => {
      db = await target.open();
    });
    afterAll(async () => {
      if (db) await target.dispose(db);
    });

    it("finds the committed migrations from the repository root", () => {
      expect(fs.existsSync(path.join(repoRoot(), "prisma", "schema.prisma"))).toBe(true);
      expect(committed.map((m) => m.name)).toEqual([...committed.map((m) => m.name)].sort());
      expect(committed.length).toBeGreaterThanOrEqual(2);
      expect(committed[0]?.name).toMatch(/_init$/);
    });

    it("migrates, and migrating again is a no-op", async () => {
      const first = await migrate(db);
      expect(first.applied).toEqual(committed.map((m) => m.name));
      expect(first.alreadyApplied).toEqual([]);

      const second = await migrate(db);
      expect(second.applied).toEqual([]);
      expect(second.alreadyApplied).toEqual(committed.map((m) => m.name));
      expect(second.unknownInDatabase).toEqual([]);
    });

    it("records migrations in _prisma_migrations exactly as Prisma does", async () => {
      const rows = await db.prisma.$queryRawUnsafe<
        { migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null; applied_steps_count: number; id: string; logs: string | null }[]
      >(`SELECT id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name`);
      expect(rows.map((r) => r.migration_name)).toEqual(committed.map((m) => m.name));
      for (const [i, row] of rows.entries()) {
        const file = path.join(defaultMigrationsDir(), row.migration_name, "migration.sql");
        expect(row.checksum).toBe(sha256Hex(fs.readFileSync(file)));
        expect(row.checksum).toBe(committed[i]?.checksum);
        expect(row.finished_at).not.toBeNull();
        expect(row.rolled_back_at).toBeNull();
        expect(row.logs).toBeNull();
        expect(Number(row.applied_steps_count)).toBe(1);
        expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      }
    });

    it("stores a pipeline with versions numbered 1, 2", async () => {
      const pipeline = await db.prisma.pipeline.create({
        data: { name: "card-velocity", description: "velocity rules", draft: graph("draft") },
      });
      expect(pipeline.id).toMatch(/^c[a-z0-9]{20,}$/); // cuid
      expect(pipeline.createdAt).toBeInstanceOf(Date);

      // The way callers should number versions: next number inside one transaction.
      const addVersion = (message: string) =>
        db.prisma.$transaction(async (tx) => {
          const last = await tx.pipelineVersion.findFirst({
            where: { pipelineId: pipeline.id },
            orderBy: { number: "desc" },
            select: { number: true },
          });
          const g = graph(message);
          return tx.pipelineVersion.create({
            data: {
              pipelineId: pipeline.id,
              number: (last?.number ?? 0) + 1,
              graph: g,
              graphHash: sha256Hex(JSON.stringify(g)),
              message,
              author: "alice@example.com",
            },
          });
        });
      const v1 = await addVersion("first");
      const v2 = await addVersion("second");
      expect([v1.number, v2.number]).toEqual([1, 2]);

      const versions = await db.prisma.pipelineVersion.findMany({
        where: { pipelineId: pipeline.id },
        orderBy: { number: "asc" },
      });
      expect(versions.map((v) => v.number)).toEqual([1, 2]);
      expect(versions[1]?.graph).toEqual(graph("second"));
      expect(versions[1]?.graphHash).toMatch(/^[0-9a-f]{64}$/);

      const withVersions = await db.prisma.pipeline.findUniqueOrThrow({
        where: { name: "card-velocity" },
        include: { versions: { orderBy: { number: "desc" }, take: 1 } },
      });
      expect(withVersions.versions[0]?.number).toBe(2);
      expect(withVersions.draft).toEqual(graph("draft"));
    });

    it("refuses a second version with the same number for a pipeline", async () => {
      const pipeline = await db.prisma.pipeline.findUniqueOrThrow({ where: { name: "card-velocity" } });
      const err = await expectRejects(
        db.prisma.pipelineVersion.create({
          data: { pipelineId: pipeline.id, number: 2, graph: graph("dup"), graphHash: "x", author: "bob" },
        }),
        /Unique constraint failed/,
      );
      expect(err).toBeInstanceOf(Prisma.PrismaClientKnownRequestError);
      expect((err as Prisma.PrismaClientKnownRequestError).code).toBe("P2002");

      // …but the same number in another pipeline is fine.
      const other = await db.prisma.pipeline.create({ data: { name: "other", draft: {} } });
      await db.prisma.pipelineVersion.create({
        data: { pipelineId: other.id, number: 2, graph: graph("o"), graphHash: "y", author: "bob" },
      });
    });

    it("refuses to change a pipeline version (immutable)", async () => {
      const v = await db.prisma.pipelineVersion.findFirstOrThrow({ where: { number: 1, pipeline: { name: "card-velocity" } } });
      await expectRejects(
        db.prisma.pipelineVersion.update({ where: { id: v.id }, data: { message: "rewritten" } }),
        /immutable/,
      );
    });

    it("keeps the audit trail append-only", async () => {
      const first = await db.prisma.auditEvent.create({
        data: { actor: "alice", action: "pipeline.create", subjectType: "pipeline", subjectId: "p1", details: { a: 1 }, hash: "h1" },
      });
      const second = await db.prisma.auditEvent.create({
        data: { actor: "alice", action: "pipeline.version", subjectType: "pipeline", subjectId: "p1", prevHash: "h1", hash: "h2", reason: "ok" },
      });
      expect(typeof first.id).toBe("bigint");
      expect(second.id > first.id).toBe(true);
      expect(second.details).toEqual({});

      await expectRejects(db.prisma.auditEvent.update({ where: { id: first.id }, data: { actor: "mallory" } }), /append-only/);
      await expectRejects(db.prisma.auditEvent.delete({ where: { id: first.id } }), /append-only/);
      await expectRejects(db.prisma.auditEvent.deleteMany({}), /append-only/);
      await expectRejects(db.prisma.$executeRawUnsafe(`UPDATE audit_events SET actor = 'mallory'`), /append-only/);
      await expectRejects(db.prisma.$executeRawUnsafe(`DELETE FROM audit_events`), /append-only/);
      await expectRejects(db.prisma.$executeRawUnsafe(`TRUNCATE audit_events`), /append-only/);

      const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" } });
      expect(rows.map((r) => [r.actor, r.hash])).toEqual([
        ["alice", "h1"],
        ["alice", "h2"],
      ]);
    });

    it("round-trips deployments, checkpoints, enums, BigInt and timestamps", async () => {
      const version = await db.prisma.pipelineVersion.findFirstOrThrow({ where: { number: 2, pipeline: { name: "card-velocity" } } });
      const deployment = await db.prisma.deployment.create({
        data: { pipelineId: version.pipelineId, versionId: version.id },
      });
      expect(deployment.mode).toBe("shadow");
      expect(deployment.status).toBe("pending");

      const triggeredAt = new Date("2026-03-04T05:06:07.089Z");
      const big = 5_000_000_000n; // > 2^32
      const cp = await db.prisma.checkpoint.create({
        data: {
          deploymentId: deployment.id,
          checkpointId: 1,
          status: "completed",
          triggeredAt,
          durationMs: 1234,
          sizeBytes: big,
          incrementalSizeBytes: 42,
          alignmentMs: 3,
          acks: { "filter-1": 4 },
        },
      });
      const read = await db.prisma.checkpoint.findUniqueOrThrow({ where: { id: cp.id } });
      expect(read.triggeredAt.toISOString()).toBe(triggeredAt.toISOString());
      expect(read.sizeBytes).toBe(big);
      expect(read.incrementalSizeBytes).toBe(42n);
      expect(read.acks).toEqual({ "filter-1": 4 });
      expect(read.status).toBe("completed");

      // The instant stored is the instant written (not shifted by a session time zone).
      const utc = await db.prisma.$queryRawUnsafe<{ t: string }[]>(
        `SELECT to_char(triggered_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t FROM checkpoints WHERE id = $1`,
        cp.id,
      );
      expect(utc[0]?.t).toBe(triggeredAt.toISOString());
      const drift = await db.prisma.$queryRawUnsafe<{ s: number }[]>(
        `SELECT abs(extract(epoch FROM (now() - created_at)))::float8 AS s FROM deployments WHERE id = $1`,
        deployment.id,
      );
      expect(drift[0]?.s).toBeLessThan(60);

      const found = await db.prisma.checkpoint.findMany({ where: { triggeredAt: { gte: new Date("2026-03-04T05:06:07.000Z") } } });
      expect(found.map((c) => c.id)).toEqual([cp.id]);

      const stoppedAt = new Date();
      const updated = await db.prisma.deployment.update({
        where: { id: deployment.id },
        data: { status: "stopped", stoppedAt, mode: "enforcing", runnerJobId: "job-1" },
      });
      expect(updated.stoppedAt?.getTime()).toBe(stoppedAt.getTime());
      expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(deployment.updatedAt.getTime());

      await expectRejects(
        db.prisma.checkpoint.create({ data: { deploymentId: deployment.id, checkpointId: 1, status: "failed", triggeredAt } }),
        /Unique constraint failed/,
      );
    });

    it("stores users with a unique email and a default role", async () => {
      const user = await db.prisma.user.create({ data: { email: "a@example.com", name: "A", passwordHash: "argon2id$…" } });
      expect(user.role).toBe("analyst");
      await expectRejects(
        db.prisma.user.create({ data: { email: "a@example.com", name: "B", passwordHash: "x", role: "admin" } }),
        /Unique constraint failed/,
      );
    });

    it("deletes a pipeline with its versions, deployments and checkpoints", async () => {
      const pipeline = await db.prisma.pipeline.findUniqueOrThrow({ where: { name: "card-velocity" } });
      const version = await db.prisma.pipelineVersion.findFirstOrThrow({ where: { pipelineId: pipeline.id, number: 1 } });
      // A deployed version cannot be deleted on its own…
      const deployed = await db.prisma.deployment.create({ data: { pipelineId: pipeline.id, versionId: version.id, mode: "test" } });
      await expectRejects(db.prisma.pipelineVersion.delete({ where: { id: version.id } }), /constraint/i);
      // …but goes away with its pipeline.
      await db.prisma.pipeline.delete({ where: { id: pipeline.id } });
      expect(await db.prisma.pipelineVersion.count({ where: { pipelineId: pipeline.id } })).toBe(0);
      expect(await db.prisma.deployment.count({ where: { id: deployed.id } })).toBe(0);
      expect(await db.prisma.checkpoint.count()).toBe(0);
      expect(await db.prisma.auditEvent.count()).toBe(2);
    });

    describe("migration failures", () => {
      it("names a migration whose file changed after it was applied", async () => {
        const dir = copyMigrations();
        const scratch = await target.open();
        try {
          await migrate(scratch, { migrationsDir: dir });
          const name = committed[1]!.name;
          fs.appendFileSync(path.join(dir, name, "migration.sql"), "\n-- edited\n");
          const err = await expectRejects(migrate(scratch, { migrationsDir: dir }), new RegExp(`${name} was modified`));
          expect(err).toBeInstanceOf(MigrationError);
          expect((err as MigrationError).migrationName).toBe(name);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
          await target.dispose(scratch);
        }
      });

      it("tolerates CRLF line endings of an applied migration", async () => {
        const dir = copyMigrations();
        const scratch = await target.open();
        try {
          await migrate(scratch, { migrationsDir: dir });
          const file = path.join(dir, committed[0]!.name, "migration.sql");
          fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/\n/g, "\r\n"));
          expect((await migrate(scratch, { migrationsDir: dir })).applied).toEqual([]);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
          await target.dispose(scratch);
        }
      });

      it("rolls back a failing migration entirely and names it", async () => {
        const dir = copyMigrations();
        const bad = "29991231000000_broken";
        fs.mkdirSync(path.join(dir, bad));
        fs.writeFileSync(
          path.join(dir, bad, "migration.sql"),
          `CREATE TABLE "half_done" (id int);\nALTER TABLE "no_such_table" ADD COLUMN x int;\n`,
        );
        const scratch = await target.open();
        try {
          const err = await expectRejects(migrate(scratch, { migrationsDir: dir }), new RegExp(`Migration ${bad} failed.*no_such_table`));
          expect((err as MigrationError).migrationName).toBe(bad);
          // The good ones before it stay applied; nothing of the bad one remains.
          const names = await scratch.prisma.$queryRawUnsafe<{ migration_name: string }[]>(
            `SELECT migration_name FROM "_prisma_migrations" ORDER BY migration_name`,
          );
          expect(names.map((r) => r.migration_name)).toEqual(committed.map((m) => m.name));
          const leftover = await scratch.prisma.$queryRawUnsafe<{ n: number }[]>(
            `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'half_done' AND table_schema = current_schema()`,
          );
          expect(leftover[0]?.n).toBe(0);
          // Fix the file and it applies.
          fs.writeFileSync(path.join(dir, bad, "migration.sql"), `CREATE TABLE "half_done" (id int);\n`);
          expect((await migrate(scratch, { migrationsDir: dir })).applied).toEqual([bad]);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
          await target.dispose(scratch);
        }
      });
    });
  });
}
