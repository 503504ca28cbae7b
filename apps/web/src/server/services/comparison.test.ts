import { describe, expect, it } from "vitest";
import { RULE_VERSION_FIELD, RULE_VERSION_HEADER } from "@keyflow/operators";
import { taggedVersion } from "./comparison";

describe("taggedVersion", () => {
  it("reads the rule job's version tag from the header, else from the alert", () => {
    expect(taggedVersion({ [RULE_VERSION_HEADER]: "4" }, {})).toBe(4);
    expect(taggedVersion({}, { [RULE_VERSION_FIELD]: 3 })).toBe(3);
    expect(taggedVersion({}, { [RULE_VERSION_FIELD]: "12" })).toBe(12);
  });

  it("is null for an untagged alert (a deployment of one version writes its topic alone)", () => {
    expect(taggedVersion({}, { count: 4 })).toBeNull();
    expect(taggedVersion({ [RULE_VERSION_HEADER]: "four" }, { [RULE_VERSION_FIELD]: 2.5 })).toBeNull();
  });
});
