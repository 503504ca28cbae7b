// A rule job namespaces each version's nodes `v<N>-<id>`; a deployment's panels see its own version's ids.
import { describe, expect, it } from "vitest";
import { branchSkew } from "./rule-jobs";

const op = (node: string) => ({ node, records: [1, 2], mean: 1.5, skewedSubtasks: [], hotKeys: [] });

describe("branchSkew", () => {
  it("keeps the version's own keyed nodes under the version's ids and leaves the other branches out", () => {
    expect(branchSkew("rule-abc", 1, [op("v1-byCard"), op("v2-byCard"), op("v1-velocity"), op("v12-velocity")])).toEqual([op("byCard"), op("velocity")]);
  });

  it("leaves a job of its own (not a rule job) as the runner reports it", () => {
    expect(branchSkew("dep-1", 1, [op("v2-byCard"), op("byCard")])).toEqual([op("v2-byCard"), op("byCard")]);
  });
});
