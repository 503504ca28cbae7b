import { describe, expect, it } from "vitest";
import { refuseUnsafeRequest } from "./csrf";
import { clearedSessionCookie, SESSION_COOKIE, sessionCookie, sessionTokenFrom } from "./session";

const post = (headers: Record<string, string>) => new Request("http://localhost:3000/api/trpc/pipeline.create", { method: "POST", headers: { host: "localhost:3000", ...headers }, body: "{}" });

describe("refuseUnsafeRequest", () => {
  it("lets GET through and a same-origin JSON POST with the CSRF header", () => {
    expect(refuseUnsafeRequest(new Request("http://localhost:3000/api/trpc/pipeline.list"))).toBeNull();
    expect(refuseUnsafeRequest(post({ "content-type": "application/json", "x-keyflow-csrf": "1" }))).toBeNull();
    expect(refuseUnsafeRequest(post({ "content-type": "application/json; charset=utf-8", "x-keyflow-csrf": "1", origin: "http://localhost:3000", "sec-fetch-site": "same-origin" }))).toBeNull();
  });

  it.each([
    ["a form post", { "content-type": "application/x-www-form-urlencoded" }, 415],
    ["a text/plain post", { "content-type": "text/plain", "x-keyflow-csrf": "1" }, 415],
    ["no content type", {}, 415],
    ["JSON without the header", { "content-type": "application/json" }, 403],
    ["JSON with a wrong header value", { "content-type": "application/json", "x-keyflow-csrf": "yes" }, 403],
    ["another origin", { "content-type": "application/json", "x-keyflow-csrf": "1", origin: "https://evil.test" }, 403],
    ["an opaque origin", { "content-type": "application/json", "x-keyflow-csrf": "1", origin: "null" }, 403],
    ["a cross-site fetch", { "content-type": "application/json", "x-keyflow-csrf": "1", "sec-fetch-site": "cross-site" }, 403],
  ] as const)("refuses %s", (_what, headers, status) => {
    expect(refuseUnsafeRequest(post(headers))?.status).toBe(status);
  });
});

describe("the session cookie", () => {
  it("is __Host-, HttpOnly, Secure, SameSite=Lax, Path=/, without Domain, for as long as the session", () => {
    const now = new Date("2026-12-02T10:00:00Z");
    expect(sessionCookie("tok", new Date(now.getTime() + 3_600_000), now)).toBe(`${SESSION_COOKIE}=tok; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=3600`);
    expect(clearedSessionCookie()).toBe(`${SESSION_COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Lax; Max-Age=0`);
  });

  it("is found among other cookies, and a look-alike name is not it", () => {
    expect(sessionTokenFrom(`a=1; ${SESSION_COOKIE}=abc; b=2`)).toBe("abc");
    expect(sessionTokenFrom(`keyflow_session=abc; x${SESSION_COOKIE}=def`)).toBeNull();
    expect(sessionTokenFrom(`${SESSION_COOKIE}=`)).toBeNull();
    expect(sessionTokenFrom(null)).toBeNull();
  });
});
