// The web app's server process (what `next start` was): Next's request handler on node:http, with a
// front doing what Next alone cannot, before Next sees a request:
// - a body whose Content-Length is over its route's cap (src/server/http/body-limit.ts) is refused
//   with 413 without being read (the route handlers cap undeclared bodies as they read them);
// - the client's address, from the socket, replaces any x-keyflow-client-address a client sent: the
//   sign-in throttle keys on it (src/server/auth/throttle.ts);
// - the security headers go on every answer, the front's own included.
// Listens on HOST:PORT (given by web-process.ts); run with `node --import tsx`.
import http from "node:http";
import next from "next";
import { CLIENT_ADDRESS_HEADER } from "../src/server/http/client-address";
import { bodyLimitFor, BodyTooLargeError } from "../src/server/http/body-limit";
import { securityHeaders } from "../src/server/http/security-headers";
import { WEB_DIR } from "./web-process";

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? "127.0.0.1";
const headers = securityHeaders(false);

const app = next({ dev: false, dir: WEB_DIR, hostname: host, port });
await app.prepare();
const handle = app.getRequestHandler();

const server = http.createServer((req, res) => {
  for (const { key, value } of headers) res.setHeader(key, value);
  req.headers[CLIENT_ADDRESS_HEADER] = req.socket.remoteAddress ?? "unknown";
  const pathname = new URL(req.url ?? "/", "http://web").pathname;
  const limit = bodyLimitFor(pathname);
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > limit) {
    // The rest of the body is never read: the connection closes after the answer.
    res.writeHead(413, { "content-type": "application/json; charset=utf-8", connection: "close" });
    res.end(JSON.stringify({ error: { message: new BodyTooLargeError(limit).message, code: "PAYLOAD_TOO_LARGE" } }));
    return;
  }
  void handle(req, res);
});
server.listen(port, host, () => console.log(`listening on http://${host.includes(":") ? `[${host}]` : host}:${port}`));

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 5_000).unref();
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
