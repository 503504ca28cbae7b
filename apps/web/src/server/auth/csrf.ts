// The request-level guard in front of every state-changing route (tRPC mutations, login, logout).
// A cross-site page can make a browser send a form post (application/x-www-form-urlencoded,
// multipart/form-data or text/plain) with our cookie, but it cannot set a custom header or send
// application/json without a CORS preflight, which this server never answers. So a mutation must
// carry `content-type: application/json` and `x-keyflow-csrf: 1`; an Origin (or Sec-Fetch-Site)
// saying the request comes from another site is refused as well.
export const CSRF_HEADER = "x-keyflow-csrf";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

function refuse(status: number, message: string): Response {
  return Response.json({ error: { message, code: status === 415 ? "UNSUPPORTED_MEDIA_TYPE" : "FORBIDDEN" } }, { status });
}

/**
 * null when the request may proceed, else the response refusing it. `bodyType`: a route whose body is
 * not JSON (a backtest file upload: application/x-ndjson) names its own, which a form cannot send either.
 */
export function refuseUnsafeRequest(req: Request, bodyType = "application/json"): Response | null {
  if (SAFE_METHODS.has(req.method)) return null;
  const type = req.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== bodyType) {
    return refuse(415, `${req.method} needs content-type ${bodyType} (got ${type ?? "none"})`);
  }
  if (req.headers.get(CSRF_HEADER) !== "1") {
    return refuse(403, `${req.method} needs the ${CSRF_HEADER}: 1 header`);
  }
  if (req.headers.get("sec-fetch-site") === "cross-site") return refuse(403, "cross-site requests are refused");
  const origin = req.headers.get("origin");
  if (origin !== null) {
    let originHost: string | null = null;
    try {
      originHost = origin === "null" ? null : new URL(origin).host;
    } catch {
      originHost = null;
    }
    const host = req.headers.get("x-forwarded-host") ?? req.headers.get("host");
    if (originHost === null || originHost !== host) return refuse(403, `requests from origin ${origin} are refused`);
  }
  return null;
}
