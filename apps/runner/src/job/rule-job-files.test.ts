// Issue 35 point 5, the rule job's file sinks: v1 enforcing and v2 in shadow name the same
// sink.file path. The enforcement file has one writer (the branches share it through the routing),
// v2's shadow alerts go to a file of their own, and across a restart from the job's checkpoint the
// enforcement file holds every v1 alert once, in order, with no NUL bytes (two writers of the file
// once left it starting with megabytes of NULs and without ~1,300 alerts).
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readEnv } from "../env";
import { silentLogger } from "../log";
import { createJobDriver } from "./create";
import { composeRuleJob } from "./rule-job";
import { routeConnectors, RuleRouting } from "./routing";

const RULE = "big-spend";
function version(threshold: number) {
  return {
    format: "keyflow.pipeline/v1",
    name: RULE,
    settings: { checkpointIntervalMs: 20 },
    nodes: [
      { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts" } },
      { id: "big", type: "filter", params: { expression: `amount > ${threshold}` } },
      { id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } },
    ],
    edges: [
      { from: "payments", to: "big" },
      { from: "big", to: "alerts" },
    ],
  };
}

const payments = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => ({ txId: `t${from + k}`, amount: ((from + k) * 7919) % 1000, ts: 1767225600000 + from + k }));
const lines = (records: readonly object[]) => records.map((r) => JSON.stringify(r) + "\n").join("");

describe("a rule job's file sinks: one writer per file", () => {
  it.each(["stopped", "failed"] as const)("v1 enforcing and v2 in shadow on one sink.file path: after the job %s and restarted, the enforcement file holds every v1 alert once", async (how) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "keyflow-rule-files-"));
    const checkpointDir = path.join(dataDir, "..", `${path.basename(dataDir)}-ckpt`);
    mkdirSync(checkpointDir);
    const env = { ...readEnv({}), kafkaBrokers: undefined, dataDir, checkpointRoot: checkpointDir };
    const composed = composeRuleJob(
      { name: RULE, branches: [{ version: 1, mode: "enforcing", pipeline: version(500) }, { version: 2, mode: "shadow", pipeline: version(300) }] },
      dataDir,
    );
    if (!composed.ok) throw new Error(composed.problems.join("\n"));
    const run = (interruptAt?: number) => {
      const driver = createJobDriver({
        doc: composed.job.doc,
        jobId: RULE,
        baseDir: dataDir,
        env,
        log: silentLogger,
        checkpointDir,
        checkpointIntervalMs: 10,
        wrapConnectors: (plain) => routeConnectors(plain, composed.job.routes, new RuleRouting(composed.job.initialModes)),
        onCheckpoint: (stats) => {
          if (stats.id !== interruptAt) return;
          // Failed: no final checkpoint, the next epoch's alerts half-written, as when a run dies.
          if (how === "failed") throw new Error("the test fails the job");
          driver.stop("the test restarts the job");
        },
      });
      return driver.run();
    };

    const all = payments(0, 50_000);
    writeFileSync(path.join(dataDir, "payments.jsonl"), lines(all));
    // Interrupted part-way, then started again from its checkpoint (the restart of the issue).
    if (how === "failed") await expect(run(3)).rejects.toThrow("the test fails the job");
    else {
      const stopped = await run(3);
      expect(stopped.status).toBe("stopped");
      expect(stopped.nodes.payments?.recordsOut).toBeLessThan(all.length);
    }
    const finished = await run();
    expect(finished.restoredFrom ?? 0).toBeGreaterThanOrEqual(3);
    expect(finished.status).toBe("finished");

    const enforcement = readFileSync(path.join(dataDir, "out", "alerts.jsonl"), "utf8");
    expect(enforcement.includes("\0")).toBe(false);
    const expected = lines(all.filter((p) => p.amount > 500).map((p) => ({ ...p, ruleVersion: 1 })));
    expect(enforcement.length).toBe(expected.length);
    expect(enforcement === expected).toBe(true);
    // The shadow version's alerts, once each, in a file of its own.
    const shadow = readFileSync(path.join(dataDir, "out", `${RULE}.shadow.v2.alerts.jsonl`), "utf8");
    expect(shadow === lines(all.filter((p) => p.amount > 300).map((p) => ({ ...p, ruleVersion: 2 })))).toBe(true);
  });
});
