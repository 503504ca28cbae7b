// Where the web app listens by default: this machine only, unless HOST (or its former name) says otherwise.
import { describe, expect, it } from "vitest";
import { listenHost } from "./web-process";

describe("listenHost", () => {
  it("binds 127.0.0.1 unless HOST is set; KEYFLOW_WEB_HOST is still read", () => {
    expect(listenHost({})).toBe("127.0.0.1");
    expect(listenHost({ HOST: "0.0.0.0" })).toBe("0.0.0.0");
    expect(listenHost({ KEYFLOW_WEB_HOST: "::" })).toBe("::");
    expect(listenHost({ HOST: "10.0.0.5", KEYFLOW_WEB_HOST: "0.0.0.0" })).toBe("10.0.0.5");
  });
});
