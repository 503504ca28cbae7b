// `keyflow serve` as a supervisor runs it: its stdout and stderr are pipes, and the reader may go
// away before the runner does. A SIGTERM must still end it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { eventually, startCli } from "../../test/run-cli";

describe("keyflow serve", () => {
  it("stops on SIGTERM after the reader of its stdout and stderr went away (every later write fails with EPIPE)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-serve-"));
    const { child, done } = startCli(["serve"], {
      env: { RUNNER_PORT: "0", RUNNER_HOST: "127.0.0.1", KEYFLOW_LOG_LEVEL: "info", KEYFLOW_CHECKPOINT_ROOT: path.join(dir, "ckpt"), KEYFLOW_DATA_DIR: path.join(dir, "data"), KEYFLOW_STATE_DIR: path.join(dir, "state"), DATABASE_URL: "", KAFKA_BROKERS: "" },
    });
    let seen = "";
    child.stderr?.on("data", (d: string) => (seen += d));
    await eventually(() => seen.includes("runner listening"), "the runner listening");
    // The supervisor dies: the read ends of both pipes close.
    child.stdout?.destroy();
    child.stderr?.destroy();
    child.kill("SIGTERM");
    const exited = await Promise.race([done, new Promise<"still running">((r) => setTimeout(() => r("still running"), 45_000))]);
    if (exited === "still running") child.kill("SIGKILL");
    expect(exited).not.toBe("still running");
  }, 90_000);
});
