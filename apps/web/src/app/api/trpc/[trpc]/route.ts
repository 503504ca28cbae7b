import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { refuseUnsafeRequest } from "../../../../server/auth/csrf";
import { apiBodyLimit, BodyTooLargeError, bodyTooLarge, readBodyCapped } from "../../../../server/http/body-limit";
import { appRouter } from "../../../../server/root";
import { createContext } from "../../../../server/trpc";

// Node.js runtime (Prisma, PGlite, pg); never prerendered.
export const runtime = "nodejs";
export const dynamic = "force-dynamic";

async function handler(req: Request): Promise<Response> {
  // Mutations need application/json and the CSRF header, before tRPC parses anything.
  const refused = refuseUnsafeRequest(req);
  if (refused) return refused;
  // tRPC would read the whole body, however large: read it here, up to the cap, and hand it the bytes.
  let capped = req;
  if (req.method !== "GET" && req.method !== "HEAD") {
    const limit = apiBodyLimit();
    try {
      capped = new Request(req, { body: await readBodyCapped(req, limit) });
    } catch (error) {
      if (error instanceof BodyTooLargeError) return bodyTooLarge(limit);
      throw error;
    }
  }
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req: capped,
    router: appRouter,
    createContext: () => createContext({ headers: req.headers }),
    onError({ error, path }) {
      if (error.code === "INTERNAL_SERVER_ERROR") console.error(`tRPC ${path ?? "?"} failed:`, error.cause ?? error);
    },
  });
}

export { handler as GET, handler as POST };
