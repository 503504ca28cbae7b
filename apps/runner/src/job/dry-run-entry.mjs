// Entry of the dry run's worker thread: registers tsx's ESM loader in this thread and runs
// ./dry-run-worker.ts from source, as bin/keyflow.mjs does for the CLI.
import { register } from "tsx/esm/api";

register();
await import("./dry-run-worker.ts");
