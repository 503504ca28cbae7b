// The web half of `npm start`: build when the sources changed since the last build, then serve on
// PORT (default 3000) on HOST (default 127.0.0.1: this machine only; KEYFLOW_WEB_HOST, its former
// name, is still read). DATABASE_URL / KEYFLOW_PGLITE_DIR / RUNNER_URL pass through to the app.
import { ensureBuilt, listenHost, startWebServer } from "./web-process";

const port = Number(process.env.PORT ?? 3000);
const log = (line: string) => console.log(line);

const build = await ensureBuilt({ log });
if (build.built) log(`web: built in ${(build.ms / 1000).toFixed(1)} s`);
const server = await startWebServer({ port, host: listenHost(), log: (line) => log(`web: ${line}`) });
// Open the database now (PGlite boots and migrates on first use) rather than on the first page view.
await fetch(`http://127.0.0.1:${server.port}/api/health`).catch(() => undefined);
log(`web: Keyflow designer on http://localhost:${server.port}`);

const shutdown = () => {
  server.stop().then(() => process.exit(0), () => process.exit(1));
};
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
server.process.once("exit", (code) => process.exit(code ?? 1));
