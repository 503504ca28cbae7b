// Next.js configuration for Keyflow's designer.
//
// - The workspace packages ship TypeScript sources: `@keyflow/operators` (pure, also bundled for
//   the browser: catalog and validator) and `@keyflow/db` (server only) are compiled by Next.
// - Prisma's runtime, PGlite (WebAssembly + data files it reads from its own folder) and pg are
//   loaded by Node at run time instead of being bundled.
// - Nothing here reaches the network: no next/font/google, no remote images, telemetry off in
//   the scripts (NEXT_TELEMETRY_DISABLED=1).
// - Every response carries the security headers (CSP, frame-ancestors 'none', nosniff, referrer
//   policy: src/server/http/security-headers.ts).
import type { NextConfig } from "next";
import { securityHeaders } from "./src/server/http/security-headers";

const nextConfig: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  transpilePackages: ["@keyflow/operators", "@keyflow/db"],
  serverExternalPackages: ["@prisma/client", "@prisma/adapter-pg", "@electric-sql/pglite", "pglite-prisma-adapter", "pg"],
  images: { unoptimized: true },
  async headers() {
    return [{ source: "/:path*", headers: securityHeaders() }];
  },
};

export default nextConfig;
