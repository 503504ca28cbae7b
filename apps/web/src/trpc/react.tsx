"use client";
// The browser side of tRPC: TanStack Query with tRPC's query-options factory (useTRPC()).
import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, TRPCClientError } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { useState, type ReactNode } from "react";
import superjson from "superjson";
import type { AppRouter } from "../server/root";
import "./zod-jitless";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/** A query refused for want of a session (expired, or signed out in another tab): back to sign-in. */
function signInAgain(error: unknown): void {
  if (error instanceof TRPCClientError && (error.data as { code?: unknown } | undefined)?.code === "UNAUTHORIZED") {
    window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname + window.location.search)}`);
  }
}

function makeQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache({ onError: signInAgain }),
    defaultOptions: {
      queries: { staleTime: 10_000, refetchOnWindowFocus: false, retry: 1 },
    },
  });
}

export function TRPCReactProvider({ children }: { children: ReactNode }) {
  const [queryClient] = useState(makeQueryClient);
  const [trpcClient] = useState(() =>
    createTRPCClient<AppRouter>({
      links: [
        // Subscriptions (deployment.liveMetrics) arrive as server-sent events; everything else is batched.
        splitLink({
          condition: (op) => op.type === "subscription",
          true: httpSubscriptionLink({ url: "/api/trpc", transformer: superjson }),
          // The CSRF header: the server refuses a mutation without it (server/auth/csrf.ts).
          false: httpBatchLink({ url: "/api/trpc", transformer: superjson, headers: { "x-keyflow-csrf": "1" } }),
        }),
      ],
    }),
  );
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
