// The runner's node flags are written twice, in the list and in bin/keyflow.mjs's shebang (which
// cannot import it): the two must not drift apart.
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
});
