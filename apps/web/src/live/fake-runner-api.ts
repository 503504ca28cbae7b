// For the operations tests: the tRPC caller on an in-memory PGlite, pointed at a fake runner (an
// http handler speaking the part of the runner's job API a test needs), and a deploy helper.
import http from "node:http";
import { Readable } from "node:stream";
import type { AddressInfo } from "node:net";
import { createDb, migrate, type Db, type UserRole } from "@keyflow/db";
import type { PipelineDocumentInput } from "@keyflow/operators";
import { createCaller } from "../server/root";
import { createContext } from "../server/trpc";
import { asUser } from "../server/auth/test-user";

export interface FakeRunnerApi {
  db: Db;
  api: ReturnType<typeof createCaller>;
  runnerUrl: string;
  /** A caller whose subscriptions end when `signal` aborts. */
  callerWith(signal: AbortSignal): ReturnType<typeof createCaller>;
  /** Creates the pipeline, saves `graph` as its first version and deploys it (shadow). */
  deploy(graph: PipelineDocumentInput): ReturnType<ReturnType<typeof createCaller>["deployment"]["deploy"]>;
  close(): Promise<void>;
}

export async function fakeRunnerApi(handler: http.RequestListener, user: { email: string; role?: UserRole } = { email: "tester" }): Promise<FakeRunnerApi> {
  const db = createDb({ dataDir: ":memory:" });
  await migrate(db);
  const runner = http.createServer(asSingleJobApi(handler));
  await new Promise<void>((r) => runner.listen(0, "127.0.0.1", r));
  const runnerUrl = `http://127.0.0.1:${(runner.address() as AddressInfo).port}`;
  const context = () => createContext({ headers: new Headers() }, { ...asUser(user.email, user.role), db: async () => db, env: { runnerUrl } });
  const api = createCaller(context());
  return {
    db,
    api,
    runnerUrl,
    callerWith: (signal) => createCaller(context(), { signal }),
    async deploy(graph) {
      const { id } = await api.pipeline.create({ name: graph.name, graph });
      const { version } = await api.pipeline.saveVersion({ pipelineId: id, graph, message: "go" });
      return api.deployment.deploy({ versionId: version.id });
    },
    async close() {
      runner.close();
      await db.close();
    },
  };
}

/**
 * The web app runs shadow and enforcing versions as rule jobs (POST /rule-jobs, job ids
 * `rule-<deployment>`); these fakes speak the single-job API. A rule job of one branch is passed on
 * as that one job (POST /jobs with the branch's pipeline, the id without its prefix), and the rule
 * job's paths as the job's.
 */
function asSingleJobApi(handler: http.RequestListener): http.RequestListener {
  return (req, res) => {
    const url = req.url ?? "";
    if (req.method !== "POST" || url !== "/rule-jobs") {
      req.url = url.replace(/^\/jobs\/rule-/, "/jobs/");
      handler(req, res);
      return;
    }
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString()));
    req.on("end", () => {
      const body = JSON.parse(text) as { jobId: string; rule: { branches: { pipeline: unknown }[] }; restoreFrom?: string; parallelism?: number; allowNonRestoredState?: boolean };
      const { jobId, rule, ...start } = body;
      const single = JSON.stringify({ deploymentId: jobId.replace(/^rule-/, ""), pipeline: rule.branches[0]?.pipeline, ...start });
      const forwarded = Object.assign(Readable.from([Buffer.from(single)]), { method: "POST", url: "/jobs", headers: req.headers });
      handler(forwarded as unknown as http.IncomingMessage, res);
    });
  };
}
