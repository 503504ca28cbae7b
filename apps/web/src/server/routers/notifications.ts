// Notifications addressed to the caller's role (approvers: emergency rollbacks): the list behind the
// badge, and "mark read". Reading is per person; nothing here creates one (services do, audited).
import { z } from "zod";
import { listNotifications, markNotificationsRead } from "../services/notifications";
import { authedProcedure, createTRPCRouter } from "../trpc";

export const notificationsRouter = createTRPCRouter({
  list: authedProcedure.input(z.object({ limit: z.number().int().min(1).max(200).default(50) }).default({ limit: 50 })).query(async ({ ctx, input }) => listNotifications((await ctx.db()).prisma, ctx.user, input.limit)),
  markRead: authedProcedure
    .input(z.object({ ids: z.array(z.string().min(1)).max(500).optional() }))
    .mutation(async ({ ctx, input }) => markNotificationsRead((await ctx.db()).prisma, ctx.user, input.ids)),
});
