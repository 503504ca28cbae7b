// Entry of the runner service without the CLI (`tsx apps/runner/src/main.ts`), same as `keyflow serve`.
import { readEnv } from "./env";
import { startRunnerService } from "./service/main";

const code = await startRunnerService({ env: readEnv(), deployFiles: process.argv.slice(2) });
process.exit(code);
