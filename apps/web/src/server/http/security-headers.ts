// The security headers of every response, pages and API alike (next.config.ts's headers() and the
// web server's front, scripts/http-server.ts, for the answers Next never sees). The CSP keeps
// everything on this origin and still lets the designer work offline: Next's inline bootstrap
// scripts and React's inline styles ('unsafe-inline'), Monaco's styles, its codicon font and its
// web workers (bundled worker chunks from this origin; blob: for workers Monaco may build itself).
// `next dev` also needs eval for its hot reload.
export function contentSecurityPolicy(dev = process.env.NODE_ENV !== "production"): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'unsafe-inline'${dev ? " 'unsafe-eval'" : ""}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "worker-src 'self' blob:",
    `connect-src 'self'${dev ? " ws: wss:" : ""}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function securityHeaders(dev?: boolean): { key: string; value: string }[] {
  return [
    { key: "Content-Security-Policy", value: contentSecurityPolicy(dev) },
    { key: "X-Content-Type-Options", value: "nosniff" },
    { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
    { key: "X-Frame-Options", value: "DENY" },
  ];
}
