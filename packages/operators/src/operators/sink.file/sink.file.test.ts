import { describe, expect, it } from "vitest";
import { sinkFileSpec } from "./sink.file";

describe("sink.file spec", () => {
  it("takes a path", () => {
    expect(sinkFileSpec.params.parse({ path: "out/alerts.jsonl" })).toEqual({ path: "out/alerts.jsonl" });
    expect(sinkFileSpec.params.safeParse({}).success).toBe(false);
    expect(sinkFileSpec.outputs).toEqual([]);
  });
});
