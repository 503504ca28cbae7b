// The API of the designer: one router per area, mounted at /api/trpc (app/api/trpc/[trpc]/route.ts).
import { auditRouter } from "./routers/audit";
import { backtestsRouter } from "./routers/backtests";
import { catalogRouter } from "./routers/catalog";
import { comparisonRouter } from "./routers/comparison";
import { deploymentRouter } from "./routers/deployment";
import { notificationsRouter } from "./routers/notifications";
import { pipelineRouter } from "./routers/pipeline";
import { promotionRouter } from "./routers/promotion";
import { templatesRouter } from "./routers/templates";
import { usersRouter } from "./routers/users";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  pipeline: pipelineRouter,
  deployment: deploymentRouter,
  catalog: catalogRouter,
  templates: templatesRouter,
  users: usersRouter,
  audit: auditRouter,
  promotion: promotionRouter,
  comparison: comparisonRouter,
  backtests: backtestsRouter,
  notifications: notificationsRouter,
});

export type AppRouter = typeof appRouter;

/** Server-side calls without HTTP (tests, server components). */
export const createCaller = createCallerFactory(appRouter);
