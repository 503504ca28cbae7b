// For the operations tests: the tRPC caller on an in-memory PGlite, pointed at a fake runner (an
// http handler speaking the part of the runner's job API a test needs), and a deploy helper.
import http from "node:http";
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
  const runner = http.createServer(handler);
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
