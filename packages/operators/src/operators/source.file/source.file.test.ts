import { describe, expect, it } from "vitest";
import { sourceFileSpec } from "./source.file";

describe("source.file spec", () => {
  it("takes a path, a timestamp field and an out-of-orderness bound (default 10 s)", () => {
    expect(sourceFileSpec.params.parse({ path: "payments.jsonl", timestampField: "ts" })).toEqual({ path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 10_000 });
    expect(sourceFileSpec.params.parse({ path: "p.jsonl", timestampField: "ts", maxOutOfOrdernessMs: "2s" }).maxOutOfOrdernessMs).toBe(2000);
    expect(sourceFileSpec.params.safeParse({ path: "", timestampField: "ts" }).error?.issues[0]?.message).toBe('must be a file path, e.g. "data/payments.jsonl"');
  });
});
