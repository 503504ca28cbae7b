#!/usr/bin/env node
// The `keyflow` command: registers tsx's ESM loader and runs src/cli.ts from source (no build step).
import { register } from "tsx/esm/api";

register();
await import("../src/cli.ts");
