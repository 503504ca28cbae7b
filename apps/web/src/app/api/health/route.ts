// GET /api/health: 200 once the database is open and migrated (and the first admin exists). Needs
// no session, reveals nothing; what `npm start` and the e2e support wait for.
import { getDb } from "../../../server/db";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

export async function GET(): Promise<Response> {
  try {
    await getDb();
    return Response.json({ ok: true }, { headers: { "cache-control": "no-store" } });
  } catch (error) {
    console.error("health: the database is not ready:", error);
    return Response.json({ ok: false }, { status: 503 });
  }
}
