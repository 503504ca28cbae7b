// People, permissions and the audit trail against the REAL PostgreSQL server (DATABASE_URL), through
// the app's own route handlers (app/api/**/route.ts) as Next.js calls them: sign-in and its cookie,
// sessions, roles on every procedure, the CSRF guard, GET never mutating, the append-only and
// hash-chained audit trail, and `keyflow audit verify` (the runner's CLI) on a tampered row.
// Each run works in a throw-away schema, dropped afterwards.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import superjson from "superjson";
import { appendAuditEvent, createDb, migrate, parseDatabaseUrl, type Db, type UserRole } from "@keyflow/db";
import { PIPELINE_FORMAT } from "@keyflow/operators";
import { hashPassword } from "./password";
import { SESSION_COOKIE } from "./session";

const DATABASE_URL = process.env.DATABASE_URL;
if (!DATABASE_URL) throw new Error("auth.int.test.ts needs DATABASE_URL pointing at a real PostgreSQL server (npm run services)");
const REPO = path.resolve(import.meta.dirname, "..", "..", "..", "..", "..");
const ORIGIN = "http://localhost:3000";
const PASSWORD = "correct horse battery staple";

function scratchUrl(): string {
  const url = new URL(parseDatabaseUrl(DATABASE_URL ?? "").connectionString);
  url.searchParams.set("schema", `kf_auth_${process.pid}_${Date.now().toString(36)}`);
  return url.toString();
}

type Route = { GET?: (req: Request) => Promise<Response>; POST?: (req: Request) => Promise<Response> };

describe("people, permissions and the audit trail (PostgreSQL)", () => {
  const databaseUrl = scratchUrl();
  let db: Db;
  let trpcRoute: Route;
  let loginRoute: Route;
  let logoutRoute: Route;
  let exportRoute: Route;
  const cookies: Record<string, string> = {};

  /** A tRPC call over HTTP as a browser would send it (JSON and the CSRF header unless told otherwise). */
  async function call(kind: "query" | "mutation", procedure: string, input: unknown, opts: { as?: string; headers?: Record<string, string>; body?: string } = {}) {
    const headers: Record<string, string> = { host: "localhost:3000", ...(opts.as ? { cookie: `${SESSION_COOKIE}=${cookies[opts.as]}` } : {}) };
    let req: Request;
    if (kind === "query") {
      req = new Request(`${ORIGIN}/api/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`, { method: "GET", headers });
    } else {
      req = new Request(`${ORIGIN}/api/trpc/${procedure}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-keyflow-csrf": "1", origin: ORIGIN, ...headers, ...opts.headers },
        body: opts.body ?? JSON.stringify(superjson.serialize(input)),
      });
    }
    const handler = kind === "query" ? trpcRoute.GET : trpcRoute.POST;
    if (!handler) throw new Error("the tRPC route has no handler for that method");
    const res = await handler(req);
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (kept as text)
    }
    return { status: res.status, body };
  }

  const codeOf = (body: unknown) => (body as { error?: { json?: { data?: { code?: string } } } }).error?.json?.data?.code;

  /** `address`: the client address the web server's front (scripts/http-server.ts) would have stamped. */
  async function login(email: string, password = PASSWORD, address = "127.0.0.1"): Promise<Response> {
    const post = loginRoute.POST;
    if (!post) throw new Error("no POST /api/auth/login");
    return post(
      new Request(`${ORIGIN}/api/auth/login`, {
        method: "POST",
        headers: { host: "localhost:3000", origin: ORIGIN, "content-type": "application/json", "x-keyflow-csrf": "1", "x-keyflow-client-address": address },
        body: JSON.stringify({ email, password }),
      }),
    );
  }

  async function user(email: string, role: UserRole) {
    return db.prisma.user.create({ data: { email, name: email.split("@")[0] ?? email, role, passwordHash: await hashPassword(PASSWORD) } });
  }

  beforeAll(async () => {
    // No runner: a deployment that gets past the checks fails at the runner (never reaches a real one).
    process.env.RUNNER_URL = "http://127.0.0.1:9";
    db = createDb({ databaseUrl });
    await migrate(db);
    // The app's route handlers open the database through server/db.ts, which keeps it here.
    (globalThis as typeof globalThis & { __keyflowDb?: Promise<Db> }).__keyflowDb = Promise.resolve(db);
    trpcRoute = (await import("../../app/api/trpc/[trpc]/route")) as Route;
    loginRoute = (await import("../../app/api/auth/login/route")) as Route;
    logoutRoute = (await import("../../app/api/auth/logout/route")) as Route;
    exportRoute = (await import("../../app/api/audit/export/route")) as Route;
    await user("ada@bank.test", "analyst");
    await user("pat@bank.test", "approver");
    await user("root@bank.test", "admin");
    for (const [name, email] of [["analyst", "ada@bank.test"], ["approver", "pat@bank.test"], ["admin", "root@bank.test"]] as const) {
      const res = await login(email);
      expect(res.status).toBe(200);
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
      cookies[name] = cookie?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
    }
  }, 120_000);

  afterAll(async () => {
    (globalThis as typeof globalThis & { __keyflowDb?: Promise<Db> }).__keyflowDb = undefined;
    if (db?.driver.kind === "postgres" && db.driver.schema) await db.driver.pool.query(`DROP SCHEMA IF EXISTS "${db.driver.schema}" CASCADE`);
    await db?.close();
  });

  it("signs in with a __Host- cookie that is HttpOnly, Secure, SameSite=Lax, Path=/ and has no Domain; the session row keeps only a hash", async () => {
    const res = await login("ada@bank.test");
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`)) ?? "";
    const attributes = cookie.split(";").slice(1).map((a) => a.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(["path=/", "httponly", "secure", "samesite=lax"]));
    expect(attributes.some((a) => a.startsWith("domain="))).toBe(false);
    expect(attributes.find((a) => a.startsWith("max-age="))).toBe("max-age=43200");
    const token = cookie.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
    expect(token.length).toBeGreaterThanOrEqual(43);
    const rows = await db.prisma.session.findMany({ select: { tokenHash: true } });
    expect(rows.some((r) => r.tokenHash === token)).toBe(false);
    expect(rows.length).toBeGreaterThanOrEqual(4);
  });

  it("refuses a wrong password without saying which part was wrong, and records the attempt", async () => {
    const wrong = await login("ada@bank.test", "not the password");
    const unknown = await login("nobody@bank.test", "whatever it is");
    expect([wrong.status, unknown.status]).toEqual([401, 401]);
    expect(await wrong.json()).toEqual(await unknown.json());
    expect(wrong.headers.getSetCookie()).toEqual([]);
    const failed = await db.prisma.auditEvent.findMany({ where: { action: "login_failed" } });
    expect(failed.map((e) => e.actor).sort()).toEqual(["ada@bank.test", "nobody@bank.test"]);
  });

  it("answers queries and mutations without a session with UNAUTHORIZED", async () => {
    for (const [kind, procedure, input] of [
      ["query", "pipeline.list", undefined],
      ["query", "catalog.list", undefined],
      ["query", "audit.list", {}],
      ["mutation", "pipeline.create", { name: "anonymous" }],
    ] as const) {
      const res = await call(kind, procedure, input);
      expect({ procedure, status: res.status, code: codeOf(res.body) }).toEqual({ procedure, status: 401, code: "UNAUTHORIZED" });
    }
    // The old actor header names nobody any more.
    const forged = await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/pipeline.list`, { headers: { "x-keyflow-actor": "root@bank.test" } }));
    expect(forged?.status).toBe(401);
    const bogus = await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/pipeline.list`, { headers: { cookie: `${SESSION_COOKIE}=made-up` } }));
    expect(bogus?.status).toBe(401);
  });

  it("lets an analyst author but not change roles, deploy to enforcement or see the users (FORBIDDEN)", async () => {
    const created = await call("mutation", "pipeline.create", { name: "ada-rule" }, { as: "analyst" });
    expect(created.status).toBe(200);
    const users = await call("query", "users.list", undefined, { as: "analyst" });
    expect(codeOf(users.body)).toBe("FORBIDDEN");
    const ada = await db.prisma.user.findUniqueOrThrow({ where: { email: "ada@bank.test" } });
    const promote = await call("mutation", "users.setRole", { userId: ada.id, role: "admin" }, { as: "analyst" });
    expect({ status: promote.status, code: codeOf(promote.body) }).toEqual({ status: 403, code: "FORBIDDEN" });
    expect((await db.prisma.user.findUniqueOrThrow({ where: { id: ada.id } })).role).toBe("analyst");
    const enforce = await call("mutation", "deployment.deploy", { versionId: "any", mode: "enforcing" }, { as: "analyst" });
    expect(codeOf(enforce.body)).toBe("FORBIDDEN");
    // An approver may not manage people either.
    const byApprover = await call("mutation", "users.setRole", { userId: ada.id, role: "approver" }, { as: "approver" });
    expect(codeOf(byApprover.body)).toBe("FORBIDDEN");
  });

  it("lets an admin change a role, and records who did it, the old and the new role and why", async () => {
    const ada = await db.prisma.user.findUniqueOrThrow({ where: { email: "ada@bank.test" } });
    const res = await call("mutation", "users.setRole", { userId: ada.id, role: "approver", reason: "covers for Pat" }, { as: "admin" });
    expect(res.status).toBe(200);
    const event = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "role_change", subjectId: ada.id } });
    expect(event).toMatchObject({ actor: "root@bank.test", reason: "covers for Pat", details: { email: "ada@bank.test", before: "analyst", after: "approver" } });
    await call("mutation", "users.setRole", { userId: ada.id, role: "analyst" }, { as: "admin" });
    // The only admin cannot step down, and the refused change leaves no record.
    const root = await db.prisma.user.findUniqueOrThrow({ where: { email: "root@bank.test" } });
    const before = await db.prisma.auditEvent.count();
    const stepDown = await call("mutation", "users.setRole", { userId: root.id, role: "analyst" }, { as: "admin" });
    expect(codeOf(stepDown.body)).toBe("PRECONDITION_FAILED");
    expect((await db.prisma.user.findUniqueOrThrow({ where: { id: root.id } })).role).toBe("admin");
    expect(await db.prisma.auditEvent.count()).toBe(before);
  });

  it("refuses a cross-site form post, a text/plain post, a JSON post without the CSRF header and a foreign Origin", async () => {
    const before = await db.prisma.pipeline.count();
    const cookie = `${SESSION_COOKIE}=${cookies.analyst}`;
    const attempts: [string, Record<string, string>, string][] = [
      ["form post", { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.test", "sec-fetch-site": "cross-site" }, "name=evil"],
      ["multipart", { "content-type": "multipart/form-data; boundary=x", origin: "https://evil.test" }, "--x--"],
      ["text/plain", { "content-type": "text/plain", "x-keyflow-csrf": "1" }, JSON.stringify(superjson.serialize({ name: "plain" }))],
      ["no CSRF header", { "content-type": "application/json" }, JSON.stringify(superjson.serialize({ name: "noheader" }))],
      ["foreign origin", { "content-type": "application/json", "x-keyflow-csrf": "1", origin: "https://evil.test" }, JSON.stringify(superjson.serialize({ name: "foreign" }))],
    ];
    for (const [what, headers, body] of attempts) {
      const res = await trpcRoute.POST?.(new Request(`${ORIGIN}/api/trpc/pipeline.create`, { method: "POST", headers: { host: "localhost:3000", cookie, ...headers }, body }));
      expect({ what, refused: res !== undefined && (res.status === 403 || res.status === 415) }).toEqual({ what, refused: true });
    }
    // The sign-in and sign-out routes are guarded the same way.
    const formLogin = await loginRoute.POST?.(new Request(`${ORIGIN}/api/auth/login`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "email=a&password=b" }));
    expect(formLogin?.status).toBe(415);
    const formLogout = await logoutRoute.POST?.(new Request(`${ORIGIN}/api/auth/logout`, { method: "POST", headers: { "content-type": "text/plain", cookie }, body: "" }));
    expect(formLogout?.status).toBe(415);
    expect(await db.prisma.pipeline.count()).toBe(before);
    expect((await call("query", "users.me", undefined, { as: "analyst" })).status).toBe(200);
  });

  it("never mutates on GET: a mutation asked for with GET is refused and changes nothing", async () => {
    const before = await db.prisma.pipeline.count();
    const res = await call("query", "pipeline.create", { name: "via-get" }, { as: "admin" });
    expect(res.status).toBe(405);
    expect(await db.prisma.pipeline.count()).toBe(before);
    expect(logoutRoute.GET).toBeUndefined();
    expect(loginRoute.GET).toBeUndefined();
    // A batch over GET that includes a mutation is refused whole.
    const batch = await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/pipeline.list,pipeline.create?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { json: null }, 1: { json: { name: "batched" } } }))}`, { headers: { cookie: `${SESSION_COOKIE}=${cookies.admin}` } }));
    expect(batch?.status).not.toBe(200);
    expect(await db.prisma.pipeline.count()).toBe(before);
  });

  it("records create, edit (with the diff) and save version (with the diff and message) as the signed-in user", async () => {
    const graph = (expression: string) => ({
      format: PIPELINE_FORMAT,
      name: "audited",
      nodes: [
        { id: "in", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
        { id: "big", type: "filter", params: { expression } },
        { id: "out", type: "sink.kafka", params: { topic: "alerts" } },
      ],
      edges: [
        { from: "in", to: "big" },
        { from: "big", to: "out" },
      ],
    });
    const created = await call("mutation", "pipeline.create", { name: "audited", graph: graph("amount > 100") }, { as: "analyst" });
    const id = (created.body as { result: { data: { json: { id: string } } } }).result.data.json.id;
    await call("mutation", "pipeline.saveDraft", { pipelineId: id, graph: graph("amount > 500") }, { as: "analyst" });
    await call("mutation", "pipeline.saveVersion", { pipelineId: id, graph: graph("amount > 900"), message: "tighter" }, { as: "analyst" });
    const events = await db.prisma.auditEvent.findMany({ where: { details: { path: ["pipelineId"], equals: id } }, orderBy: { id: "asc" } });
    expect(events.map((e) => [e.action, e.actor])).toEqual([
      ["create", "ada@bank.test"],
      ["edit", "ada@bank.test"],
      ["save_version", "ada@bank.test"],
    ]);
    expect(events[1]?.details).toMatchObject({ diff: { changedNodes: [{ id: "big", changes: [{ path: "expression", before: "amount > 100", after: "amount > 500" }] }] } });
    expect(events[2]).toMatchObject({ reason: "tighter", details: { number: 1, diff: { addedNodes: ["in", "big", "out"] } } });
    const version = await db.prisma.pipelineVersion.findFirstOrThrow({ where: { pipelineId: id } });
    expect(version.author).toBe("ada@bank.test");

    // The audit view's filters and the export see the same rows.
    const listed = await call("query", "audit.list", { pipelineId: id, actor: "ada@", action: "edit" }, { as: "approver" });
    expect((listed.body as { result: { data: { json: { events: { action: string }[] } } } }).result.data.json.events.map((e) => e.action)).toEqual(["edit"]);
    const csv = await exportRoute.GET?.(new Request(`${ORIGIN}/api/audit/export?format=csv&pipelineId=${id}`, { headers: { cookie: `${SESSION_COOKIE}=${cookies.approver}` } }));
    expect(csv?.headers.get("content-type")).toContain("text/csv");
    const lines = (await csv?.text())?.trim().split("\r\n") ?? [];
    expect(lines[0]).toBe("id,at,actor,action,subject_type,subject_id,reason,details,prev_hash,hash");
    expect(lines.slice(1).map((l) => l.split(",")[3])).toEqual(["create", "edit", "save_version"]);
    const json = await exportRoute.GET?.(new Request(`${ORIGIN}/api/audit/export?format=json&pipelineId=${id}&action=save_version`, { headers: { cookie: `${SESSION_COOKIE}=${cookies.approver}` } }));
    expect(((await json?.json()) as { action: string }[]).map((e) => e.action)).toEqual(["save_version"]);
    const anonymous = await exportRoute.GET?.(new Request(`${ORIGIN}/api/audit/export?format=csv`));
    expect(anonymous?.status).toBe(401);
  });

  it("logs out: the session row goes, the cookie is cleared and no longer works", async () => {
    const res = await login("pat@bank.test");
    const token = res.headers.getSetCookie()[0]?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
    const cookie = `${SESSION_COOKIE}=${token}`;
    expect((await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/users.me`, { headers: { cookie } })))?.status).toBe(200);
    const out = await logoutRoute.POST?.(new Request(`${ORIGIN}/api/auth/logout`, { method: "POST", headers: { host: "localhost:3000", origin: ORIGIN, "content-type": "application/json", "x-keyflow-csrf": "1", cookie }, body: "{}" }));
    expect(out?.status).toBe(200);
    expect(out?.headers.getSetCookie()[0]).toMatch(/^__Host-keyflow_session=; Path=\/; HttpOnly; Secure; SameSite=Lax; Max-Age=0$/);
    expect((await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/users.me`, { headers: { cookie } })))?.status).toBe(401);
    expect(await db.prisma.auditEvent.count({ where: { action: "logout", actor: "pat@bank.test" } })).toBe(1);
  });

  it("refuses an expired session", async () => {
    const res = await login("pat@bank.test");
    const token = res.headers.getSetCookie()[0]?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
    const { sha256Hex } = await import("@keyflow/db");
    await db.prisma.session.update({ where: { tokenHash: sha256Hex(token) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/users.me`, { headers: { cookie: `${SESSION_COOKIE}=${token}` } })))?.status).toBe(401);
    expect(await db.prisma.session.count({ where: { tokenHash: sha256Hex(token) } })).toBe(0);
  });

  it("promotion: an analyst cannot approve, nobody approves their own request, an approver approves with a comment, a newer version voids it", async () => {
    const graph = (expression: string) => ({
      format: PIPELINE_FORMAT,
      name: "promoted",
      nodes: [
        { id: "in", type: "source.kafka", params: { topic: "payments", timestampField: "ts" } },
        { id: "big", type: "filter", params: { expression } },
        { id: "out", type: "sink.kafka", params: { topic: "enforcement" } },
      ],
      edges: [
        { from: "in", to: "big" },
        { from: "big", to: "out" },
      ],
    });
    type Data<T> = { result: { data: { json: T } } };
    const created = await call("mutation", "pipeline.create", { name: "promoted", graph: graph("amount > 1") }, { as: "analyst" });
    const pipelineId = (created.body as Data<{ id: string }>).result.data.json.id;
    const v1 = (await call("mutation", "pipeline.saveVersion", { pipelineId, graph: graph("amount > 1"), message: "v1" }, { as: "analyst" })).body as Data<{ version: { id: string } }>;
    const asked = await call("mutation", "promotion.request", { versionId: v1.result.data.json.version.id, reason: "two weeks in shadow" }, { as: "analyst" });
    expect(asked.status).toBe(200);
    const requestId = (asked.body as Data<{ id: string; status: string }>).result.data.json.id;

    // Enforcement needs an approved request for this graph, even for an approver.
    const v1Id = v1.result.data.json.version.id;
    const early = await call("mutation", "deployment.deploy", { versionId: v1Id, mode: "enforcing" }, { as: "approver" });
    expect(codeOf(early.body)).toBe("PRECONDITION_FAILED");

    // The analyst (here also the requester) may not approve: FORBIDDEN by role.
    const byAnalyst = await call("mutation", "promotion.approve", { requestId, comment: "lgtm" }, { as: "analyst" });
    expect({ status: byAnalyst.status, code: codeOf(byAnalyst.body) }).toEqual({ status: 403, code: "FORBIDDEN" });

    // An approver who asked for a promotion cannot approve it either.
    const v1b = (await call("mutation", "pipeline.saveVersion", { pipelineId, graph: graph("amount > 1"), message: "same graph again" }, { as: "approver" })).body as Data<{ version: { id: string } }>;
    const own = (await call("mutation", "promotion.request", { versionId: v1b.result.data.json.version.id, reason: "hotfix, no time in shadow" }, { as: "approver" })).body as Data<{ id: string }>;
    const selfApproval = await call("mutation", "promotion.approve", { requestId: own.result.data.json.id }, { as: "approver" });
    expect({ status: selfApproval.status, code: codeOf(selfApproval.body) }).toEqual({ status: 403, code: "FORBIDDEN" });
    const rejected = await call("mutation", "promotion.reject", { requestId: own.result.data.json.id, comment: "not mine to approve; admin rejects" }, { as: "admin" });
    expect((rejected.body as Data<{ status: string }>).result.data.json.status).toBe("rejected");

    const approved = await call("mutation", "promotion.approve", { requestId, comment: "shadow numbers look right" }, { as: "approver" });
    expect((approved.body as Data<{ status: string; decidedBy: string; comment: string }>).result.data.json).toMatchObject({ status: "approved", decidedBy: "pat@bank.test", comment: "shadow numbers look right" });
    const again = await call("mutation", "promotion.approve", { requestId }, { as: "admin" });
    expect(codeOf(again.body)).toBe("PRECONDITION_FAILED");

    // Approved: the gate opens (the runner here is unreachable, so the deployment itself fails: BAD_GATEWAY).
    const afterApproval = await call("mutation", "deployment.deploy", { versionId: v1Id, mode: "enforcing" }, { as: "approver" });
    expect(codeOf(afterApproval.body)).toBe("BAD_GATEWAY");

    // A change after approval voids it, and enforcement is closed again.
    await call("mutation", "pipeline.saveVersion", { pipelineId, graph: graph("amount > 2"), message: "tweak" }, { as: "analyst" });
    expect((await db.prisma.promotionRequest.findUniqueOrThrow({ where: { id: requestId } })).status).toBe("void");
    expect(codeOf((await call("mutation", "deployment.deploy", { versionId: v1Id, mode: "enforcing" }, { as: "approver" })).body)).toBe("PRECONDITION_FAILED");

    const trail = await db.prisma.auditEvent.findMany({ where: { subjectType: "promotion", subjectId: requestId }, orderBy: { id: "asc" } });
    expect(trail.map((e) => [e.action, e.actor, e.reason])).toEqual([
      ["request", "ada@bank.test", "two weeks in shadow"],
      ["approve", "pat@bank.test", "shadow numbers look right"],
      ["void", "ada@bank.test", "a newer version was saved: the request no longer matches the graph that would run"],
    ]);
  });

  it("slows a guesser down with growing delays per address (try again in N s), never evaluating a refused attempt", async () => {
    await user("target@bank.test", "analyst");
    const guesser = "192.0.2.44";
    for (let i = 0; i < 10; i++) expect((await login("target@bank.test", `guess ${i}`, guesser)).status).toBe(401);
    const delayed = await login("target@bank.test", `guess 10`, guesser);
    expect(delayed.status).toBe(429);
    expect((await delayed.json()) as unknown).toEqual({ error: { message: expect.stringMatching(/^too many failed sign-ins; try again in \d+ s$/) } });
    expect(Number(delayed.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(delayed.headers.getSetCookie()).toEqual([]);
    // Refused attempts were not evaluated: ten failures on the trail, not eleven.
    expect(await db.prisma.auditEvent.count({ where: { action: "login_failed", subjectId: "target@bank.test" } })).toBe(10);
    // Others are not affected.
    expect((await login("pat@bank.test")).status).toBe(200);
  });

  it("100 parallel wrong passwords: at most the limit are evaluated, and the owner still signs in from their own address", async () => {
    await user("owner@bank.test", "approver");
    const home = "10.1.2.3";
    const stranger = "203.0.113.9";
    expect((await login("owner@bank.test", PASSWORD, home)).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => login("owner@bank.test", `wrong ${i}`, stranger)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const evaluated = await db.prisma.auditEvent.count({ where: { action: "login_failed", subjectId: "owner@bank.test" } });
    expect({ evaluated, refused: statuses.filter((s) => s === 429).length }).toEqual({ evaluated: statuses.filter((s) => s === 401).length, refused: 100 - evaluated });
    expect(evaluated).toBeLessThanOrEqual(10);
    // The stranger stays delayed, even with the right password; so does any address the owner never signed in from.
    expect((await login("owner@bank.test", PASSWORD, stranger)).status).toBe(429);
    expect((await login("owner@bank.test", PASSWORD, "198.51.100.7")).status).toBe(429);
    // The owner, from the address they signed in from before, gets in.
    const owner = await login("owner@bank.test", PASSWORD, home);
    expect(owner.status).toBe(200);
    expect(owner.headers.getSetCookie()[0]).toMatch(/^__Host-keyflow_session=/);
  });

  it("stops reading a body without Content-Length at the route's cap (413), on sign-in and on tRPC", async () => {
    /** A 300 MB body made on demand, counting what the route pulled. */
    const huge = () => {
      const chunk = new Uint8Array(1024 * 1024).fill(0x20);
      const stream = { pulled: 0, body: new ReadableStream<Uint8Array>({ pull: (c) => void (stream.pulled++ < 300 ? c.enqueue(chunk) : c.close()) }) };
      return stream;
    };
    const headers = { host: "localhost:3000", origin: ORIGIN, "content-type": "application/json", "x-keyflow-csrf": "1" };
    const toLogin = huge();
    const login = await loginRoute.POST?.(new Request(`${ORIGIN}/api/auth/login`, { method: "POST", headers, body: toLogin.body, duplex: "half" } as RequestInit));
    expect(login?.status).toBe(413);
    expect(((await login?.json()) as { error: { message: string } }).error.message).toBe("the request body is larger than 16384 bytes");
    const toTrpc = huge();
    const trpc = await trpcRoute.POST?.(new Request(`${ORIGIN}/api/trpc/pipeline.create`, { method: "POST", headers: { ...headers, cookie: `${SESSION_COOKIE}=${cookies.analyst}` }, body: toTrpc.body, duplex: "half" } as RequestInit));
    expect(trpc?.status).toBe(413);
    // Read up to the cap (16 MiB), not the 300 MB.
    expect({ login: toLogin.pulled <= 2, trpc: toTrpc.pulled <= 18 }).toEqual({ login: true, trpc: true });
  });

  it("changes your own password (the current one first) and ends your other sessions; an admin can reset one", async () => {
    await user("cho@bank.test", "analyst");
    const tokenOf = async (password?: string) => (await login("cho@bank.test", password)).headers.getSetCookie()[0]?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
    const [here, elsewhere] = [await tokenOf(), await tokenOf()];
    const me = (token: string) => trpcRoute.GET?.(new Request(`${ORIGIN}/api/trpc/users.me`, { headers: { cookie: `${SESSION_COOKIE}=${token}` } }));
    const change = (token: string, currentPassword: string) =>
      trpcRoute.POST?.(new Request(`${ORIGIN}/api/trpc/users.changePassword`, { method: "POST", headers: { host: "localhost:3000", "content-type": "application/json", "x-keyflow-csrf": "1", cookie: `${SESSION_COOKIE}=${token}` }, body: JSON.stringify(superjson.serialize({ currentPassword, newPassword: "a brand new passphrase" })) }));
    expect((await change(here, "wrong current password"))?.status).toBe(403);
    expect((await change(here, PASSWORD))?.status).toBe(200);
    expect((await me(here))?.status).toBe(200);
    expect((await me(elsewhere))?.status).toBe(401);
    expect((await login("cho@bank.test")).status).toBe(401);
    expect((await login("cho@bank.test", "a brand new passphrase")).status).toBe(200);

    const cho = await db.prisma.user.findUniqueOrThrow({ where: { email: "cho@bank.test" } });
    const byAnalyst = await call("mutation", "users.setPassword", { userId: cho.id, newPassword: "chosen by someone else" }, { as: "analyst" });
    expect(codeOf(byAnalyst.body)).toBe("FORBIDDEN");
    expect((await call("mutation", "users.setPassword", { userId: cho.id, newPassword: "reset by the admin", reason: "forgotten" }, { as: "admin" })).status).toBe(200);
    expect((await me(here))?.status).toBe(401);
    expect((await login("cho@bank.test", "reset by the admin")).status).toBe(200);
    const changes = await db.prisma.auditEvent.findMany({ where: { action: "password_change", subjectId: cho.id }, orderBy: { id: "asc" } });
    expect(changes.map((e) => [e.actor, (e.details as { by: string }).by])).toEqual([
      ["cho@bank.test", "self"],
      ["root@bank.test", "admin"],
    ]);
  });

  it("keeps the chain linear under concurrent writers (advisory lock)", async () => {
    const writers = [createDb({ databaseUrl }), createDb({ databaseUrl }), createDb({ databaseUrl })];
    try {
      await Promise.all(writers.flatMap((w, i) => Array.from({ length: 10 }, (_, j) => appendAuditEvent(w.prisma, { actor: `writer-${i}`, action: "edit", subjectType: "test", subjectId: `${i}-${j}` }))));
    } finally {
      await Promise.all(writers.map((w) => w.close()));
    }
    const rows = await db.prisma.auditEvent.findMany({ orderBy: { id: "asc" }, select: { prevHash: true, hash: true } });
    expect(new Set(rows.map((r) => r.prevHash)).size).toBe(rows.length);
    for (let i = 1; i < rows.length; i++) expect(rows[i]?.prevHash).toBe(rows[i - 1]?.hash);
  });

  it("refuses to update or delete an audit row", async () => {
    const row = await db.prisma.auditEvent.findFirstOrThrow({ orderBy: { id: "asc" } });
    await expect(db.prisma.auditEvent.update({ where: { id: row.id }, data: { actor: "someone else" } })).rejects.toThrow(/append-only/);
    await expect(db.prisma.auditEvent.delete({ where: { id: row.id } })).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`DELETE FROM audit_events`)).rejects.toThrow(/append-only/);
    await expect(db.prisma.$executeRawUnsafe(`TRUNCATE audit_events`)).rejects.toThrow(/append-only/);
  });

  it("`keyflow audit verify` passes an intact chain and names the first tampered row (exit 1)", async () => {
    const run = promisify(execFile);
    const cli = path.join(REPO, "apps/runner/bin/keyflow.mjs");
    const intact = await run(process.execPath, [cli, "audit", "verify", "--database-url", databaseUrl], { cwd: REPO });
    const count = await db.prisma.auditEvent.count();
    expect(intact.stdout).toContain(`audit trail intact: ${count} events`);

    // Tampering needs the table owner to switch the trigger off; the chain still tells.
    const victim = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "role_change" }, orderBy: { id: "asc" } });
    await db.prisma.$transaction([
      db.prisma.$executeRawUnsafe(`ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete`),
      db.prisma.$executeRawUnsafe(`UPDATE audit_events SET details = jsonb_set(details, '{after}', '"admin"') WHERE id = ${victim.id}`),
      db.prisma.$executeRawUnsafe(`ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete`),
    ]);
    const broken = await run(process.execPath, [cli, "audit", "verify", "--database-url", databaseUrl], { cwd: REPO }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(broken?.code).toBe(1);
    expect(broken?.stderr).toContain(`audit trail BROKEN at event ${victim.id}`);
    expect(broken?.stderr).toContain(`stored   hash: ${victim.hash}`);
    expect(broken?.stderr).toMatch(/expected hash: [0-9a-f]{64}/);
  }, 120_000);
});
