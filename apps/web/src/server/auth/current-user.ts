// The signed-in user for code outside tRPC (pages, the export route): the same resolution as the
// tRPC context (session cookie, else the service token).
import type { SessionUser } from "./roles";
import { createContext } from "../trpc";

export function currentUser(headers: Headers): Promise<SessionUser | null> {
  return createContext({ headers }).session();
}
