// The designer's tRPC API over HTTP, typed by the app's own router: tests set up data the way
// any client would.
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "@keyflow/web/api";

export function apiClient(baseUrl: string, actor = "e2e") {
  return createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${baseUrl}/api/trpc`, transformer: superjson, headers: { "x-keyflow-actor": actor } })],
  });
}

export type ApiClient = ReturnType<typeof apiClient>;
