// For tests that call the API without signing in: a context override that makes every call come
// from one user (the real resolution from cookies is tested in auth.int.test.ts).
import type { UserRole } from "@keyflow/db";
import type { Context } from "../trpc";

export function asUser(email: string, role: UserRole = "admin"): Pick<Context, "session"> {
  const user = { id: `test-${email}`, email, name: email, role };
  return { session: async () => user };
}
