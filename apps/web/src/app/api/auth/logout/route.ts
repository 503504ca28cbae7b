// POST /api/auth/logout: deletes the session row and clears the cookie.
import { logout } from "../../../../server/auth/routes";
import { getDb } from "../../../../server/db";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

export function POST(req: Request): Promise<Response> {
  return logout(req, async () => (await getDb()).prisma);
}
