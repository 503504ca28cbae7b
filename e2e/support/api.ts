// The designer's tRPC API over HTTP, typed by the app's own router: tests set up data the way
// any client would, signed in as a person (created on first use: ./auth.ts).
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "@keyflow/web/api";
import { SESSION_COOKIE, sessionToken, type E2eRole } from "./auth";

export function apiClient(baseUrl: string, person = "e2e", role: E2eRole = "analyst") {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${baseUrl}/api/trpc`,
        transformer: superjson,
        // Mutations need the CSRF header; everything needs the session.
        headers: async () => ({ cookie: `${SESSION_COOKIE}=${await sessionToken(baseUrl, person, role)}`, "x-keyflow-csrf": "1" }),
      }),
    ],
  });
}

export type ApiClient = ReturnType<typeof apiClient>;
