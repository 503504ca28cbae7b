// POST /api/backtests/files: the backtest panel's upload of a recorded JSON-lines file (the body, as
// application/x-ndjson with the CSRF header; its name in x-keyflow-file-name), streamed to the runner.
// Analysts and above; answers the stored file's path on the runner, or why it was refused.
import { currentUser } from "../../../../server/auth/current-user";
import { refuseUnsafeRequest } from "../../../../server/auth/csrf";
import { hasRole } from "../../../../server/auth/roles";
import { getDb } from "../../../../server/db";
import { serverEnv } from "../../../../server/env";
import { BacktestFileError, backtestFileLimit, displayName, uploadBacktestFile } from "../../../../server/services/backtests-files";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

export async function POST(req: Request): Promise<Response> {
  const refused = refuseUnsafeRequest(req, "application/x-ndjson");
  if (refused) return refused;
  const user = await currentUser(req.headers);
  if (!user) return Response.json({ error: { message: "sign in first" } }, { status: 401 });
  if (!hasRole(user.role, "analyst")) return Response.json({ error: { message: "uploading a backtest file needs the analyst role" } }, { status: 403 });
  const length = req.headers.get("content-length");
  try {
    const stored = await uploadBacktestFile((await getDb()).prisma, serverEnv().runnerUrl, user, {
      body: req.body,
      name: displayName(req.headers.get("x-keyflow-file-name")),
      declaredBytes: length !== null && /^\d+$/.test(length) ? Number(length) : null,
      maxBytes: backtestFileLimit(),
    });
    return Response.json(stored, { status: 201 });
  } catch (error) {
    if (error instanceof BacktestFileError) return Response.json({ error: { message: error.message } }, { status: error.status });
    throw error;
  }
}
