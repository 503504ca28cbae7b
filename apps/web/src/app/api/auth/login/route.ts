// POST /api/auth/login {email, password} → the session cookie (see server/auth/routes.ts).
import { login } from "../../../../server/auth/routes";
import { getDb } from "../../../../server/db";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

export function POST(req: Request): Promise<Response> {
  return login(req, async () => (await getDb()).prisma);
}
