import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../server/root";

export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

export type PipelineSummary = RouterOutputs["pipeline"]["list"][number];
export type PipelineDetail = RouterOutputs["pipeline"]["get"];
export type PipelineVersionDetail = PipelineDetail["versions"][number];
