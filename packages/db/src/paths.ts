// Where the repository's files are, independent of the current directory and of bundling.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function isRepoRoot(dir: string): boolean {
  return fs.existsSync(path.join(dir, "prisma", "migrations")) && fs.existsSync(path.join(dir, "package.json"));
}

/**
 * The repository root: the folder holding prisma/migrations. Found from this file's location
 * (packages/db/src → ../../..) or, when this module has been bundled elsewhere (e.g. into
 * apps/web/.next), by walking up from the current directory.
 */
export function repoRoot(): string {
  const candidates: string[] = [];
  try {
    candidates.push(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", ".."));
  } catch {
    // import.meta.url is not a file: URL (bundled); fall through to the cwd walk.
  }
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    candidates.push(dir);
    if (path.dirname(dir) === dir) break;
  }
  const found = candidates.find(isRepoRoot);
  if (!found) {
    throw new Error(
      `@keyflow/db: cannot find the repository root (a folder with prisma/migrations) from ${process.cwd()}; ` +
        "pass migrationsDir / dataDir explicitly",
    );
  }
  return found;
}

export function defaultMigrationsDir(): string {
  return path.join(repoRoot(), "prisma", "migrations");
}

/** KEYFLOW_PGLITE_DIR, else <repo>/.keyflow/pglite (git-ignored). */
export function defaultPgliteDir(): string {
  const fromEnv = process.env.KEYFLOW_PGLITE_DIR;
  if (fromEnv) return fromEnv;
  return path.join(repoRoot(), ".keyflow", "pglite");
}
