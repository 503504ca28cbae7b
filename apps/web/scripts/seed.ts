// Seeding through the designer's own API (as any client would): make sure a pipeline exists with
// at least one version, optionally deploy its newest version. Used by `npm start` for the example
// pipeline; idempotent, so a restart finds what the last run created.
//
// Every call is authenticated: with a service token (KEYFLOW_SERVICE_TOKEN, what `npm start` uses)
// or by signing in (KEYFLOW_EMAIL and KEYFLOW_PASSWORD).
//
//   KEYFLOW_EMAIL=… KEYFLOW_PASSWORD=… tsx apps/web/scripts/seed.ts http://localhost:3000 path/to/pipeline.json [--deploy]
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import { pipelineDocumentSchema, type PipelineDocumentInput } from "@keyflow/operators";
import type { AppRouter } from "../src/server/root";

export interface SeedResult {
  pipelineId: string;
  versionId: string;
  versionNumber: number;
  /** False when the pipeline already had a version. */
  created: boolean;
  deploymentId?: string;
}

/** How a script proves who it is: a signed-in session's cookie, or the service token. */
export type ApiAuth = { cookie: string } | { serviceToken: string };

/** Signs in at /api/auth/login; returns the Cookie header value for later requests. */
export async function signIn(url: string, email: string, password: string): Promise<{ cookie: string }> {
  const res = await fetch(`${url.replace(/\/+$/, "")}/api/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-keyflow-csrf": "1" },
    body: JSON.stringify({ email, password }),
  });
  if (!res.ok) throw new Error(`signing in as ${email} failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers.getSetCookie().map((c) => c.split(";")[0] ?? "").find((c) => c.startsWith("__Host-keyflow_session="));
  if (!cookie) throw new Error(`signing in as ${email}: the response set no session cookie`);
  return { cookie };
}

/** The headers of an authenticated API call (the CSRF header included: mutations need it). */
export function authHeaders(auth: ApiAuth): Record<string, string> {
  return { "x-keyflow-csrf": "1", ...("cookie" in auth ? { cookie: auth.cookie } : { authorization: `Bearer ${auth.serviceToken}` }) };
}

export function seedClient(url: string, auth: ApiAuth) {
  return createTRPCClient<AppRouter>({ links: [httpLink({ url: `${url.replace(/\/+$/, "")}/api/trpc`, transformer: superjson, headers: authHeaders(auth) })] });
}

export async function seedPipeline(opts: {
  url: string;
  auth: ApiAuth;
  document: PipelineDocumentInput;
  message?: string;
  /** Deploy the newest version unless one of its deployments is already pending or running. */
  deploy?: boolean;
}): Promise<SeedResult> {
  const api = seedClient(opts.url, opts.auth);
  const graph = pipelineDocumentSchema.parse(opts.document);
  const existing = (await api.pipeline.list.query()).find((p) => p.name === graph.name);
  const pipelineId = existing?.id ?? (await api.pipeline.create.mutate({ name: graph.name, description: graph.description, graph })).id;
  let pipeline = await api.pipeline.get.query({ id: pipelineId });
  let created = false;
  if (pipeline.versions.length === 0) {
    await api.pipeline.saveVersion.mutate({ pipelineId, graph, message: opts.message ?? "example pipeline" });
    pipeline = await api.pipeline.get.query({ id: pipelineId });
    created = true;
  }
  const newest = pipeline.versions[0];
  if (!newest) throw new Error(`seed: pipeline ${graph.name} has no version after saving one`);
  const result: SeedResult = { pipelineId, versionId: newest.id, versionNumber: newest.number, created };
  if (opts.deploy) {
    const live = pipeline.deployments.find((d) => d.versionId === newest.id && (d.status === "pending" || d.status === "running"));
    result.deploymentId = live?.id ?? (await api.deployment.deploy.mutate({ versionId: newest.id })).id;
  }
  return result;
}

const isMain = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const [url, file] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
  if (!url || !file) {
    console.error("usage: KEYFLOW_EMAIL=… KEYFLOW_PASSWORD=… tsx apps/web/scripts/seed.ts <web url> <pipeline.json> [--deploy]  (or KEYFLOW_SERVICE_TOKEN=…)");
    process.exit(2);
  }
  const document = pipelineDocumentSchema.parse(JSON.parse(fs.readFileSync(file, "utf8")));
  try {
    const { KEYFLOW_SERVICE_TOKEN: token, KEYFLOW_EMAIL: email, KEYFLOW_PASSWORD: password } = process.env;
    let auth: ApiAuth;
    if (token) auth = { serviceToken: token };
    else if (email && password) auth = await signIn(url, email, password);
    else throw new Error("set KEYFLOW_EMAIL and KEYFLOW_PASSWORD (or KEYFLOW_SERVICE_TOKEN) to seed as someone");
    console.log(JSON.stringify(await seedPipeline({ url, auth, document, deploy: process.argv.includes("--deploy") })));
  } catch (error) {
    console.error(`seed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
