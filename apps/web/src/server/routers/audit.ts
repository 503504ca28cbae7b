// The audit trail, read-only: filtered pages for the Audit view and the filter's vocabulary.
// The CSV/JSON export is a streaming route handler (app/api/audit/export/route.ts) over the same filter.
import { z } from "zod";
import { AUDIT_ACTIONS } from "@keyflow/db";
import { listAuditEvents, type AuditFilter } from "../services/audit";
import { authedProcedure, createTRPCRouter } from "../trpc";

export const auditFilterSchema = z.object({
  actor: z.string().trim().max(320).optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  pipelineId: z.string().min(1).optional(),
  from: z.coerce.date().optional(),
  to: z.coerce.date().optional(),
}) satisfies z.ZodType<AuditFilter>;

export const auditRouter = createTRPCRouter({
  list: authedProcedure
    .input(auditFilterSchema.extend({ limit: z.number().int().min(1).max(500).default(100), cursor: z.string().regex(/^\d+$/).nullish() }))
    .query(async ({ ctx, input }) => {
      const { limit, cursor, ...filter } = input;
      return listAuditEvents((await ctx.db()).prisma, filter, { limit, before: cursor ?? undefined });
    }),
  actions: authedProcedure.query(() => AUDIT_ACTIONS),
});
