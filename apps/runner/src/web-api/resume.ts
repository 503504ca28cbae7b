// `keyflow resume <deploymentId> [--web URL] [--savepoint PATH] [--allow-non-restored-state] [--reason TEXT]`:
// resumes a stopped deployment through the web app's API (deployment.resume), signed in as a person
// (KEYFLOW_EMAIL, KEYFLOW_PASSWORD), so the server's role check (an approver for one that may
// enforce), its state-compatibility check and the audit trail apply as they do to the button.
// Exit codes: 0 resumed, 1 refused (the server's reason on stderr), 2 bad usage or no web app.
import { parseArgs } from "node:util";
import { z } from "zod";

const USAGE = "usage: keyflow resume <deploymentId> [--web URL] [--savepoint PATH] [--allow-non-restored-state] [--reason TEXT]   (env KEYFLOW_WEB_URL, default http://127.0.0.1:3000; KEYFLOW_EMAIL and KEYFLOW_PASSWORD)";
const SESSION_COOKIE = "__Host-keyflow_session";

export interface ResumeCommandIo {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
}

const stdio: ResumeCommandIo = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`), env: process.env };

const answerSchema = z.union([
  z.object({ result: z.object({ data: z.object({ json: z.object({ from: z.string(), runnerJobId: z.string().nullable(), deployment: z.looseObject({ id: z.string(), status: z.string() }) }) }) }) }),
  z.object({ error: z.object({ json: z.looseObject({ message: z.string(), data: z.looseObject({ code: z.string().optional(), httpStatus: z.number().optional() }).optional() }) }) }),
]);

async function signIn(web: string, email: string, password: string): Promise<string> {
  const res = await fetch(`${web}/api/auth/login`, { method: "POST", headers: { "content-type": "application/json", "x-keyflow-csrf": "1" }, body: JSON.stringify({ email, password }) });
  if (!res.ok) throw new Error(`signing in as ${email} at ${web} failed: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
  const cookie = res.headers.getSetCookie().map((c) => c.split(";")[0] ?? "").find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  if (!cookie) throw new Error(`signing in as ${email} at ${web}: the answer set no session cookie`);
  return cookie;
}

export async function resumeCommand(args: readonly string[], io: ResumeCommandIo = stdio): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: { web: { type: "string" }, savepoint: { type: "string" }, "allow-non-restored-state": { type: "boolean" }, reason: { type: "string" } }, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`keyflow resume: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    return 2;
  }
  const [deploymentId, ...extra] = parsed.positionals;
  if (deploymentId === undefined || extra.length > 0) {
    io.err(`keyflow resume: ${deploymentId === undefined ? "missing the deployment id" : `unexpected "${extra.join(" ")}"`}\n${USAGE}`);
    return 2;
  }
  const web = (parsed.values.web ?? io.env.KEYFLOW_WEB_URL ?? "http://127.0.0.1:3000").replace(/\/+$/, "");
  const email = io.env.KEYFLOW_EMAIL;
  const password = io.env.KEYFLOW_PASSWORD;
  if (!email || !password) {
    io.err(`keyflow resume: set KEYFLOW_EMAIL and KEYFLOW_PASSWORD (the web app checks that person's role and audits the resume)\n${USAGE}`);
    return 2;
  }
  const input = {
    deploymentId,
    ...(parsed.values.savepoint ? { savepointPath: parsed.values.savepoint } : {}),
    ...(parsed.values["allow-non-restored-state"] ? { allowNonRestoredState: true } : {}),
    ...(parsed.values.reason ? { reason: parsed.values.reason } : {}),
  };
  let answer: z.infer<typeof answerSchema>;
  try {
    const cookie = await signIn(web, email, password);
    const res = await fetch(`${web}/api/trpc/deployment.resume`, { method: "POST", headers: { "content-type": "application/json", "x-keyflow-csrf": "1", cookie }, body: JSON.stringify({ json: input }) });
    const body: unknown = await res.json().catch(() => null);
    const checked = answerSchema.safeParse(body);
    if (!checked.success) throw new Error(`unexpected answer from ${web} (HTTP ${res.status}): ${JSON.stringify(body).slice(0, 300)}`);
    answer = checked.data;
  } catch (err) {
    io.err(`keyflow resume: ${err instanceof Error ? (err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message) : String(err)}`);
    return 2;
  }
  if ("error" in answer) {
    io.err(`keyflow resume: refused (${answer.error.json.data?.code ?? "error"}): ${answer.error.json.message}`);
    return 1;
  }
  const done = answer.result.data.json;
  io.out(`deployment ${done.deployment.id} ${done.deployment.status} again (job ${done.runnerJobId ?? "?"}), from ${done.from}`);
  return 0;
}
