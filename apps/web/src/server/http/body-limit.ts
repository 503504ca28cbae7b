// Request body caps for every route of the web app, applied before anything parses a body: the
// web server's front (scripts/http-server.ts) refuses a declared Content-Length over the route's cap
// without reading it, and the route handlers read their body through readBodyCapped(), which stops
// at the cap whatever the client declared (a chunked body has no Content-Length). No imports from the
// app beyond zod: the front loads this module outside Next's bundle.
import { z } from "zod";

/** As the runner's own default (KEYFLOW_UPLOAD_MAX_BYTES applies to both): refused here before a byte is sent. */
export const DEFAULT_BACKTEST_FILE_MAX_BYTES = 256 * 1024 * 1024;

export function backtestFileLimit(env: Record<string, string | undefined> = process.env): number {
  const parsed = z.coerce.number().int().min(1).safeParse(env.KEYFLOW_UPLOAD_MAX_BYTES);
  return env.KEYFLOW_UPLOAD_MAX_BYTES && parsed.success ? parsed.data : DEFAULT_BACKTEST_FILE_MAX_BYTES;
}

/** Sign-in and sign-out: an email and a password fit in far less. */
export const AUTH_BODY_LIMIT = 16 * 1024;
/** Everything else (tRPC: a pipeline, a dry run's pasted sample); KEYFLOW_WEB_MAX_BODY_BYTES. */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024;

export function apiBodyLimit(env: Record<string, string | undefined> = process.env): number {
  const parsed = z.coerce.number().int().min(1024).safeParse(env.KEYFLOW_WEB_MAX_BODY_BYTES);
  return env.KEYFLOW_WEB_MAX_BODY_BYTES && parsed.success ? parsed.data : DEFAULT_BODY_LIMIT;
}

/** The cap of a path: uploads have their own (KEYFLOW_UPLOAD_MAX_BYTES), sign-in a small one. */
export function bodyLimitFor(pathname: string, env: Record<string, string | undefined> = process.env): number {
  if (pathname === "/api/backtests/files") return backtestFileLimit(env);
  if (pathname.startsWith("/api/auth/")) return AUTH_BODY_LIMIT;
  return apiBodyLimit(env);
}

export class BodyTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the request body is larger than ${maxBytes} bytes`);
  }
}

export function bodyTooLarge(maxBytes: number): Response {
  return Response.json({ error: { message: new BodyTooLargeError(maxBytes).message, code: "PAYLOAD_TOO_LARGE" } }, { status: 413, headers: { connection: "close" } });
}

/** The whole body, or BodyTooLargeError as soon as it passes `maxBytes` (the rest is not read). */
export async function readBodyCapped(req: Request, maxBytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new BodyTooLargeError(maxBytes);
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** The body parsed as JSON within `maxBytes`: a 413 or 400 Response when it is too large or not JSON. */
export async function readJsonCapped(req: Request, maxBytes: number): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  let bytes: Uint8Array;
  try {
    bytes = await readBodyCapped(req, maxBytes);
  } catch (error) {
    if (error instanceof BodyTooLargeError) return { ok: false, response: bodyTooLarge(maxBytes) };
    throw error;
  }
  try {
    return { ok: true, value: JSON.parse(new TextDecoder().decode(bytes)) };
  } catch {
    return { ok: false, response: Response.json({ error: { message: "the body is not JSON" } }, { status: 400 }) };
  }
}
