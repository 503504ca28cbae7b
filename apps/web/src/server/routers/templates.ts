import { listTemplates } from "../services/templates";
import { authedProcedure, createTRPCRouter } from "../trpc";

export const templatesRouter = createTRPCRouter({
  /** The seeds' patterns as ready-made pipelines (examples/templates), by title. */
  list: authedProcedure.query(() => listTemplates()),
});
