// For server components: the signed-in user, or a redirect to /login that comes back here.
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { currentUser } from "./current-user";
import { hasRole, type SessionUser } from "./roles";
import type { UserRole } from "@keyflow/db";

export async function requireUser(returnTo: string, role: UserRole | null = null): Promise<SessionUser> {
  const user = await currentUser(await headers());
  if (!user) redirect(`/login?next=${encodeURIComponent(returnTo)}`);
  if (role !== null && !hasRole(user.role, role)) redirect("/");
  return user;
}
