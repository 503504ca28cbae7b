// Prisma CLI configuration (Prisma 6.19), read by `npx prisma …` run from the repository root.
//
// engine "js" + experimental.adapter = the WebAssembly schema engine that ships in the prisma
// package: nothing is downloaded, so `prisma generate` and `prisma migrate diff` work offline.
// The CLI opens the adapter below for every migrate command (even `migrate diff`), so by default
// it is a throw-away in-memory PGlite. To inspect a persistent embedded database, point
// KEYFLOW_PGLITE_DIR at it (e.g. KEYFLOW_PGLITE_DIR=.keyflow/pglite npx prisma migrate status;
// stop the app first: a PGlite directory can be open in one process only).
// Do NOT point the CLI at a real server through @prisma/adapter-pg: it fails (prisma/prisma#27403).
// Apply migrations with `npm run db:migrate -w @keyflow/db` (PGlite or DATABASE_URL) instead.
import fs from "node:fs";
import path from "node:path";
import { defineConfig } from "prisma/config";

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: path.join("prisma", "schema.prisma"),
  migrations: { path: path.join("prisma", "migrations") },
  async adapter() {
    const { PGlite } = await import("@electric-sql/pglite");
    // pglite-prisma-adapter, patched for Prisma 6.19 (awaits scripts, maps errors).
    const { createPGliteAdapter } = await import("./packages/db/src/pglite-adapter");
    const dir = process.env.KEYFLOW_PGLITE_DIR;
    if (!dir || dir === ":memory:") return createPGliteAdapter(new PGlite("memory://"));
    fs.mkdirSync(dir, { recursive: true });
    return createPGliteAdapter(new PGlite(dir));
  },
});
