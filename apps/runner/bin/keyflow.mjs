#!/usr/bin/env -S node --max-semi-space-size=32 --initial-old-space-size=128
// The `keyflow` command: registers tsx's ESM loader and runs src/cli.ts from source (no build step).
// The shebang's flags are src/process-flags.ts's RUNNER_NODE_FLAGS (run as `node bin/keyflow.mjs`, it goes without).
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
