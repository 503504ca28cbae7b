// Crash-safe file replacement: write a temporary file in the same folder, fsync it, rename it over
// the target, fsync the folder. Readers see the old file or the new one, never a torn one.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";

export function tempPathFor(target: string, tag = "tmp"): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${tag}-${process.pid}-${randomBytes(4).toString("hex")}`);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writeFileAtomic(target: string, data: string | Uint8Array): Promise<void> {
  await fs.mkdir(path.dirname(target), { recursive: true });
  const tmp = tempPathFor(target);
  const handle = await fs.open(tmp, "w");
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(tmp, target);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await fsyncDir(path.dirname(target));
}

export async function fileSize(file: string): Promise<number | undefined> {
  try {
    return (await fs.stat(file)).size;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function isNotFound(err: unknown): boolean {
  return typeof err === "object" && err !== null && "code" in err && err.code === "ENOENT";
}
