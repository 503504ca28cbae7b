import { listTemplates } from "../services/templates";
import { createTRPCRouter, publicProcedure } from "../trpc";

export const templatesRouter = createTRPCRouter({
  /** The seeds' patterns as ready-made pipelines (examples/templates), by title. */
  list: publicProcedure.query(() => listTemplates()),
});
