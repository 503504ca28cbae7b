// Who may do what. Roles are ordered: an approver can do what an analyst can, an admin what an
// approver can. What an approver may never do (approve their own change) is checked where the
// approval happens, not here.
import type { UserRole } from "@keyflow/db";

const RANK: Record<UserRole, number> = { analyst: 1, approver: 2, admin: 3 };

export const ROLES: readonly UserRole[] = ["analyst", "approver", "admin"];

export function hasRole(role: UserRole, needed: UserRole): boolean {
  return RANK[role] >= RANK[needed];
}

/** The signed-in person as procedures see it. */
export interface SessionUser {
  id: string;
  email: string;
  name: string;
  role: UserRole;
}
