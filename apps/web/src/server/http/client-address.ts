// The client's address as the web server's front (scripts/http-server.ts) stamps it from the socket,
// replacing any value a client sent. Behind `next dev` there is none: "unknown".
export const CLIENT_ADDRESS_HEADER = "x-keyflow-client-address";

export function clientAddress(headers: Headers): string {
  return headers.get(CLIENT_ADDRESS_HEADER)?.trim() || "unknown";
}
