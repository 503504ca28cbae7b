// The runner's bearer token when none is configured: generated at each start of `keyflow serve` and
// written, readable by its owner only (0600), to `<state folder>/runner-token`, where the `keyflow`
// commands on the same machine find it. The job-control API never runs without a token.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

export const RUNNER_TOKEN_FILE = "runner-token";

/** A fresh token (32 random bytes, base64url) written atomically to `<stateDir>/runner-token` (0600); returns it and the file. */
export async function generateRunnerToken(stateDir: string): Promise<{ token: string; file: string }> {
  const token = randomBytes(32).toString("base64url");
  const file = path.join(stateDir, RUNNER_TOKEN_FILE);
  await fs.mkdir(stateDir, { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temp, `${token}\n`, { mode: 0o600 });
  // The mode given to writeFile is masked by the umask; say it again.
  await fs.chmod(temp, 0o600);
  await fs.rename(temp, file);
  return { token, file };
}

/** The token a running `keyflow serve` generated in `stateDir`, or undefined when there is none. */
export async function readRunnerToken(stateDir: string): Promise<string | undefined> {
  try {
    const text = (await fs.readFile(path.join(stateDir, RUNNER_TOKEN_FILE), "utf8")).trim();
    return text === "" ? undefined : text;
  } catch {
    return undefined;
  }
}
