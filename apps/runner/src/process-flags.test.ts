// The runner's node flags are written three times, in the list, in bin/keyflow.mjs's shebang (which
// cannot import it) and in the engine bench's script (packages/operators cannot depend on the runner):
// they must not drift apart.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RUNNER_NODE_FLAGS } from "./process-flags";

describe("RUNNER_NODE_FLAGS", () => {
  it("are the flags of the keyflow command's shebang", () => {
    const bin = path.join(path.dirname(fileURLToPath(import.meta.url)), "../bin/keyflow.mjs");
    const shebang = readFileSync(bin, "utf8").split("\n")[0] ?? "";
    expect(shebang.startsWith("#!/usr/bin/env -S node ")).toBe(true);
    expect(shebang.slice("#!/usr/bin/env -S node ".length).split(" ")).toEqual([...RUNNER_NODE_FLAGS]);
  });

  it("are the engine bench's flags (npm run bench -w packages/operators), so that it measures the engine as the runner runs it", () => {
    const manifest = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../packages/operators/package.json");
    const script = (JSON.parse(readFileSync(manifest, "utf8")) as { scripts: { bench: string } }).scripts.bench;
    const words = script.split(" ");
    expect(words[0]).toBe("node");
    for (const flag of RUNNER_NODE_FLAGS) expect(words).toContain(flag);
  });
});
