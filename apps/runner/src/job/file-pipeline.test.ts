// A file pipeline end to end through the real CLI: source.file -> filter -> sink.file, malformed
// lines to the dead-letter file with reason and line; then checkpoints: a second run resumes, and a
// run killed with SIGKILL and restarted writes exactly the output of an uninterrupted run.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { eventually, RUNNER_DIR, runCli, startCli } from "../../test/run-cli";

const FIXTURE = path.join(RUNNER_DIR, "test", "fixtures", "file-filter");

function fixtureCopy(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-file-"));
  cpSync(FIXTURE, dir, { recursive: true });
  return dir;
}

const jsonLines = (file: string): unknown[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);

describe("keyflow run: file -> filter -> file", () => {
  it("writes the matching records, dead-letters malformed lines with reason and line, prints a summary", async () => {
    const dir = fixtureCopy();
    const r = await runCli(["run", path.join(dir, "pipeline.json")]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);

    const out = jsonLines(path.join(dir, "out", "big-payments.jsonl")) as { id: string }[];
    expect(out.map((o) => o.id)).toEqual(["p2", "p3", "p8"]);
    expect(out[0]).toEqual({ id: "p2", cardId: "c2", amount: 900.5, country: "AE", ts: 1767225601000 });

    const dlq = jsonLines(path.join(dir, "out", "big-payments.dlq.jsonl")) as { node: string; reason: string; raw?: string; source: { node: string; path: string; line: number } }[];
    expect(dlq).toHaveLength(2);
    expect(dlq[0]?.source).toEqual({ node: "payments", partition: 0, path: "payments.jsonl", line: 4 });
    expect(dlq[0]?.reason).toMatch(/JSON/);
    expect(dlq[0]?.raw).toBe('{"id":"p4","cardId":"c3","amount": oops,"ts":1767225603000}');
    expect(dlq[1]?.source.line).toBe(7);
    expect(dlq[1]?.reason).toMatch(/"ts"/);
    expect(dlq[1]?.raw).toBe('{"id":"p6","cardId":"c4","amount":7000,"country":"GB"}');

    expect(r.stdout).toMatch(/pipeline "big-payments" finished/);
    expect(r.stdout).toMatch(/^payments\s+source\.file\s+8\s+6\s/m);
    expect(r.stdout).toMatch(/^big\s+filter\s+6\s+3\s/m);
    expect(r.stdout).toMatch(/dead letters: 2 -> out\/big-payments\.dlq\.jsonl/);
    // No staging or pending files are left beside the output.
    expect(readdirSync(path.join(dir, "out")).sort()).toEqual(["big-payments.dlq.jsonl", "big-payments.jsonl"]);
  });

  it("a second run with the same --checkpoint-dir resumes at the end and repeats no output", async () => {
    const dir = fixtureCopy();
    const ckpt = path.join(dir, "ckpt");
    const first = await runCli(["run", path.join(dir, "pipeline.json"), "--checkpoint-dir", ckpt]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/checkpoint 1 in /);
    const before = readFileSync(path.join(dir, "out", "big-payments.jsonl"), "utf8");

    const second = await runCli(["run", path.join(dir, "pipeline.json"), "--checkpoint-dir", ckpt]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/resumed from checkpoint 1/);
    expect(readFileSync(path.join(dir, "out", "big-payments.jsonl"), "utf8")).toBe(before);
    expect(readdirSync(ckpt).filter((n) => n.startsWith("chk-"))).toHaveLength(2);
  });

  it("killed with SIGKILL mid-run and restarted, the output equals an uninterrupted run's", async () => {
    const dir = fixtureCopy();
    const lines: string[] = [];
    for (let i = 0; i < 200_000; i++) {
      if (i % 997 === 0) lines.push(`{"id":"bad${i}", amount: }`);
      else lines.push(JSON.stringify({ id: `t${i}`, amount: (i * 7919) % 1000, ts: 1767225600000 + i }));
    }
    writeFileSync(path.join(dir, "payments.jsonl"), lines.join("\n") + "\n");
    const pipeline = path.join(dir, "pipeline.json");

    const reference = await runCli(["run", pipeline]);
    expect(reference.code).toBe(0);
    const expected = readFileSync(path.join(dir, "out", "big-payments.jsonl"), "utf8");
    const expectedDlq = readFileSync(path.join(dir, "out", "big-payments.dlq.jsonl"), "utf8");
    expect(expected.split("\n").length).toBeGreaterThan(50_000);

    const ckpt = path.join(dir, "ckpt");
    const run = startCli(["run", pipeline, "--checkpoint-dir", ckpt, "--checkpoint-interval", "5"]);
    // Kill as soon as a checkpoint is committed (if the run is faster, the restart resumes at the end).
    await eventually(() => existsSync(ckpt) && readdirSync(ckpt).some((n) => n.startsWith("chk-") && existsSync(path.join(ckpt, n, "_committed"))), "a first checkpoint");
    run.child.kill("SIGKILL");
    const killed = await run.done;

    const resumed = await runCli(["run", pipeline, "--checkpoint-dir", ckpt]);
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    if (killed.signal === "SIGKILL") expect(resumed.stdout).toMatch(/resumed from checkpoint \d+/);
    expect(readFileSync(path.join(dir, "out", "big-payments.jsonl"), "utf8")).toBe(expected);
    expect(readFileSync(path.join(dir, "out", "big-payments.dlq.jsonl"), "utf8")).toBe(expectedDlq);
  });
});
