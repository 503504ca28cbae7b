// Entry of a keyed subtask's worker thread: registers tsx's ESM loader in this thread and runs
// ./worker.ts from source, as bin/keyflow.mjs does for the CLI.
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
