import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** e2e/artifacts (git-ignored): screenshots and server logs of the last run. */
export const ARTIFACTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "artifacts");

export function artifactPath(name: string): string {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return path.join(ARTIFACTS_DIR, name);
}

/** A line logger appending to an artifact file (e.g. the web server's output). */
export function artifactLog(name: string): { log: (line: string) => void; path: string } {
  const file = artifactPath(name);
  fs.writeFileSync(file, "");
  return { path: file, log: (line) => fs.appendFileSync(file, `${line}\n`) };
}
