import { catalog, type OperatorSpec } from "@keyflow/operators";
import { toOperatorView, type OperatorView } from "../../catalog/operator-view";
import { authedProcedure, createTRPCRouter } from "../trpc";

let views: OperatorView[] | undefined;

export const catalogRouter = createTRPCRouter({
  /** Every operator the engine knows, in palette order, as plain JSON (params as JSON Schema). */
  list: authedProcedure.query(() => (views ??= catalog.map((spec: OperatorSpec) => toOperatorView(spec)))),
});
