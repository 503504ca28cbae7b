// Entry of the changelog compactor's worker thread: registers tsx's ESM loader in this thread and
// runs ./changelog-compactor-worker.ts from source, as bin/keyflow.mjs does for the CLI.
import { register } from "tsx/esm/api";

register();
await import("./changelog-compactor-worker.ts");
