// Keeps the runner's file access inside its folders (the data folder, its uploads, the checkpoint
// root): a path is resolved against its folder and judged by where it really is (symlinks followed;
// a file not there yet through its nearest existing parent), so neither an absolute path, `..` nor
// a symbolic link leads out. The validator refuses such paths first; this is the runner's own check.
import { lstatSync, realpathSync } from "node:fs";
import path from "node:path";

export class PathOutsideFolderError extends Error {
  override name = "PathOutsideFolderError";
}

const isMissing = (err: unknown) => typeof err === "object" && err !== null && "code" in err && (err.code === "ENOENT" || err.code === "ENOTDIR");

/** `p` (absolute, normalized) with every existing part's symlinks resolved; a symlink to nothing is `dangling`. */
function realLocation(p: string): { real: string; dangling?: string } {
  const rest: string[] = [];
  let cur = p;
  for (;;) {
    try {
      return { real: path.join(realpathSync(cur), ...rest) };
    } catch (err) {
      if (!isMissing(err)) throw err;
      // A link whose target is missing: where it would write is not where it stands.
      let link = false;
      try {
        link = lstatSync(cur).isSymbolicLink();
      } catch {
        // not there at all: go up
      }
      if (link) return { real: p, dangling: cur };
      const parent = path.dirname(cur);
      if (parent === cur) return { real: p };
      rest.unshift(path.basename(cur));
      cur = parent;
    }
  }
}

export interface Confinement {
  /** The folder the path must stay in. */
  root: string;
  /** Where a relative path resolves from (default: root). */
  base?: string;
  /** The folder's name in messages: "data folder", "checkpoint folder". */
  folder: string;
}

/**
 * The real location of `p` (resolved against `base`), when it is inside `root`; otherwise a
 * PathOutsideFolderError naming `what` (`node "src": param "path"`, `restoreFrom`).
 */
export function confinePath(p: string, what: string, c: Confinement): string {
  const root = realLocation(path.resolve(c.root)).real;
  const resolved = path.resolve(c.base ?? c.root, p);
  const { real, dangling } = realLocation(resolved);
  if (dangling !== undefined) throw new PathOutsideFolderError(`${what} ${JSON.stringify(p)} goes through a symbolic link to nothing (${dangling}): it must be a path inside the ${c.folder}`);
  const rel = path.relative(root, real);
  if (rel === "" || rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    const how = real !== resolved ? " (through a symbolic link)" : path.isAbsolute(p) ? " (an absolute path)" : "";
    throw new PathOutsideFolderError(`${what} ${JSON.stringify(p)} must be a path inside the ${c.folder}${rel === "" ? ", not the folder itself" : `; it leads out of it${how}`}`);
  }
  return real;
}
