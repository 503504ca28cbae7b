// GET /api/audit/export?format=csv|json&actor=&action=&pipelineId=&from=&to=: the filtered audit
// trail as a download, streamed page by page (oldest first) so a long trail never sits in memory.
import { z } from "zod";
import { auditFilterSchema } from "../../../../server/routers/audit";
import { currentUser } from "../../../../server/auth/current-user";
import { getDb } from "../../../../server/db";
import { allAuditEvents, CSV_COLUMNS, csvLine } from "../../../../server/services/audit";

export const runtime = "nodejs";
export const dynamic = "force-dynamic";

const query = auditFilterSchema.extend({ format: z.enum(["csv", "json"]).default("csv") });

export async function GET(req: Request): Promise<Response> {
  const user = await currentUser(req.headers);
  if (!user) return Response.json({ error: { message: "sign in first" } }, { status: 401 });
  const params = Object.fromEntries([...new URL(req.url).searchParams].filter(([, v]) => v !== ""));
  const parsed = query.safeParse(params);
  if (!parsed.success) return Response.json({ error: { message: `audit export: ${z.prettifyError(parsed.error)}` } }, { status: 400 });
  const { format, ...filter } = parsed.data;
  const prisma = (await getDb()).prisma;
  const encoder = new TextEncoder();
  const rows = allAuditEvents(prisma, filter);
  let first = true;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(format === "csv" ? `${CSV_COLUMNS.join(",")}\r\n` : "[\n"));
    },
    async pull(controller) {
      try {
        const next = await rows.next();
        if (next.done) {
          if (format === "json") controller.enqueue(encoder.encode("\n]\n"));
          controller.close();
          return;
        }
        const text = format === "csv" ? csvLine(next.value) : `${first ? "" : ",\n"}${JSON.stringify({ ...next.value, at: next.value.at.toISOString() })}`;
        first = false;
        controller.enqueue(encoder.encode(text));
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await rows.return(undefined);
    },
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  return new Response(stream, {
    headers: {
      "content-type": format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
      "content-disposition": `attachment; filename="keyflow-audit-${stamp}.${format}"`,
      "cache-control": "no-store",
    },
  });
}
