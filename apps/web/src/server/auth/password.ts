// Password hashing with argon2id (@node-rs/argon2: a prebuilt native module, no build step).
// Parameters are argon2's defaults for the library version (m=19456 KiB, t=2, p=1: OWASP's minimum
// for argon2id), stored inside the PHC string, so raising them later keeps old hashes verifiable.
import { hash, verify } from "@node-rs/argon2";

export const MIN_PASSWORD_LENGTH = 12;

export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

/** False for a wrong password and for a hash that is not argon2 (e.g. a disabled account's "!"). */
export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  if (!passwordHash.startsWith("$argon2")) return false;
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}
