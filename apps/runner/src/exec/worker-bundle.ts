// A worker thread's code as one ES module, built with esbuild when the runner first needs it.
// From source, a worker goes through tsx's loader module by module (a synchronous round trip to the
// loader's thread for each of ~150 modules): a keyed subtask took 0.3 s to load alone and 0.7 s on
// two busy cores before its first record, a sixth of a 500 k-event run. The bundle loads in ~0.1 s.
import { createHash } from "node:crypto";
import { mkdir, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Plugin } from "esbuild";

/**
 * Bundles live beside the runner's dependencies (apps/runner/node_modules/.cache, the usual place
 * for tools' caches), so that the packages they import stay bare specifiers resolved from there,
 * exactly as from the sources.
 */
export const WORKER_BUNDLE_DIR = new URL("../../node_modules/.cache/keyflow-workers/", import.meta.url);

/** npm packages stay imports (native bindings, one copy on disk); the workspace's own TypeScript is bundled. */
const npmPackagesExternal: Plugin = {
  name: "npm-packages-external",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => (args.path.startsWith("@keyflow/") ? undefined : { path: args.path, external: true }));
  },
};

const built = new Map<string, Promise<URL>>();

/**
 * The URL of a bundle of `entry` (a TypeScript module), built once per process and named after
 * its content, so that runners of different versions sharing the folder never load each other's.
 * Rejects when it cannot be built or written (the caller starts the worker from source instead).
 */
export function workerBundle(entry: URL): Promise<URL> {
  let p = built.get(entry.href);
  if (p === undefined) {
    p = buildBundle(entry);
    // A failure is not remembered: the next job tries again.
    p.catch(() => built.delete(entry.href));
    built.set(entry.href, p);
  }
  return p;
}

async function buildBundle(entry: URL): Promise<URL> {
  const name = fileURLToPath(entry).replace(/^.*\//, "").replace(/\.ts$/, "");
  // Loaded only by a process that starts workers.
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    platform: "node",
    format: "esm",
    target: `node${process.versions.node.split(".")[0]}`,
    sourcemap: "external",
    plugins: [npmPackagesExternal],
    write: false,
    // The map names the sources relative to where the bundle is written.
    outdir: fileURLToPath(WORKER_BUNDLE_DIR),
    logLevel: "silent",
  });
  const js = result.outputFiles.find((f) => f.path.endsWith(".js"));
  const map = result.outputFiles.find((f) => f.path.endsWith(".js.map"));
  if (js === undefined || map === undefined) throw new Error(`esbuild wrote no bundle of ${entry.href}`);
  const base = `${name}-${createHash("sha256").update(js.contents).digest("hex").slice(0, 16)}`;
  const url = new URL(`${base}.mjs`, WORKER_BUNDLE_DIR);
  const path = fileURLToPath(url);
  try {
    // Already there (a process before this one, or another runner now): reused, and marked as used.
    await Promise.all([stat(path), stat(fileURLToPath(new URL(`${base}.body.mjs`, WORKER_BUNDLE_DIR)))]);
    const now = new Date();
    await utimes(path, now, now);
    return url;
  } catch {
    // Not there yet: written below.
  }
  await mkdir(fileURLToPath(WORKER_BUNDLE_DIR), { recursive: true });
  // Written under names of this process's own and renamed, the entry last, so a runner never loads half a file.
  const tmp = `.${process.pid}.${Date.now()}.tmp`;
  const body = fileURLToPath(new URL(`${base}.body.mjs`, WORKER_BUNDLE_DIR));
  await writeFile(`${body}.map${tmp}`, map.contents);
  await rename(`${body}.map${tmp}`, `${body}.map`);
  await writeFile(`${body}${tmp}`, Buffer.concat([js.contents, Buffer.from(`//# sourceMappingURL=${base}.body.mjs.map\n`)]));
  await rename(`${body}${tmp}`, body);
  // Stack traces of a failed worker name the TypeScript sources, as they do when run through tsx:
  // source maps are read only for modules loaded once they are enabled, hence an entry of its own.
  await writeFile(`${path}${tmp}`, `process.setSourceMapsEnabled(true);\nawait import("./${base}.body.mjs");\n`);
  await rename(`${path}${tmp}`, path);
  await pruneStaleBundles(name);
  return pathToFileURL(path);
}

/** Bundles of `name` unused for a week (older versions of the sources) go, with their maps; one in use is touched at every start. */
export async function pruneStaleBundles(name: string): Promise<void> {
  const dir = fileURLToPath(WORKER_BUNDLE_DIR);
  const weekAgo = Date.now() - 7 * 24 * 3600_000;
  for (const f of await readdir(dir)) {
    // A body and its map go with their entry (the file touched at every start); `.tmp` files are writes that a crash interrupted.
    if (!f.startsWith(`${name}-`) || f.endsWith(".body.mjs") || f.endsWith(".map")) continue;
    const s = await stat(`${dir}${f}`).catch(() => undefined);
    if (s === undefined || s.mtimeMs >= weekAgo) continue;
    await rm(`${dir}${f}`, { force: true });
    if (f.endsWith(".mjs")) {
      const body = f.replace(/\.mjs$/, ".body.mjs");
      await rm(`${dir}${body}`, { force: true });
      await rm(`${dir}${body}.map`, { force: true });
    }
  }
}
