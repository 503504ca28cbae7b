// A file pipeline end to end through the real CLI: source.file -> filter -> sink.file, malformed
// lines to the dead-letter file with reason and line; then checkpoints: a second run resumes, and a
// run killed with SIGKILL and restarted writes exactly the output of an uninterrupted run.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { eventually, RUNNER_DIR, runCli, startCli } from "../../test/run-cli";
import { readCheckpointFolder, writeSavepoint } from "./checkpoints";

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

describe("keyflow run: changelog checkpoints of keyed state", () => {
  /** A velocity pipeline over `payments` payments of 3 000 cards, in `dir`. */
  function velocityPipeline(dir: string, payments = 60_000): string {
    const pipeline = path.join(dir, "pipeline.json");
    writeFileSync(
      pipeline,
      JSON.stringify({
        format: "keyflow.pipeline/v1",
        name: "changelog",
        // Every checkpoint kept, so that the one resumed from cannot be rotated away.
        settings: { retainedCheckpoints: 100_000 },
        nodes: [
          { id: "payments", type: "source.file", params: { path: "payments.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
          { id: "byCard", type: "keyBy", params: { field: "card" } },
          { id: "vel", type: "velocity", params: { threshold: 3, windowMs: 60_000, mode: "eager" } },
          { id: "alerts", type: "sink.file", params: { path: "out/alerts.jsonl" } },
        ],
        edges: [
          { from: "payments", to: "byCard" },
          { from: "byCard", to: "vel" },
          { from: "vel", to: "alerts" },
        ],
      }),
    );
    const lines = Array.from({ length: payments }, (_, i) => JSON.stringify({ id: `t${i}`, card: `c${(i * 7919) % 3_000}`, ts: 1767225600000 + i }));
    writeFileSync(path.join(dir, "payments.jsonl"), lines.join("\n") + "\n");
    return pipeline;
  }
  const sortedLines = (file: string) => readFileSync(file, "utf8").split("\n").filter(Boolean).sort();

  it("writes changes over a whole state written in the background, and a run resumed from such a checkpoint writes the uninterrupted output", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-changelog-"));
    const pipeline = velocityPipeline(dir);
    const reference = await runCli(["run", pipeline]);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = readFileSync(path.join(dir, "out", "alerts.jsonl"), "utf8");
    expect(expected.split("\n").length).toBeGreaterThan(10_000);

    const ckpt = path.join(dir, "ckpt");
    const first = await runCli(["run", pipeline, "--checkpoint-dir", ckpt, "--checkpoint-interval", "1"]);
    expect(first.code, first.stderr).toBe(0);
    const folders = readdirSync(ckpt).filter((n) => n.startsWith("chk-")).sort();
    const chainOf = (n: string) => (JSON.parse(readFileSync(path.join(ckpt, n, "_metadata.json"), "utf8")) as { changelog?: { chain: string[] } }).changelog?.chain;
    // The first checkpoint is whole; later ones list their chain, some over a whole state in shared/.
    expect(chainOf(folders[0] as string)).toBeUndefined();
    expect(folders.filter((n) => chainOf(n) !== undefined).length).toBeGreaterThan(folders.length / 2);
    const overShared = folders.filter((n) => chainOf(n)?.[0]?.startsWith("../shared/heap-"));
    expect(overShared.length).toBeGreaterThan(0);

    // "Crash" right after a checkpoint mid-chain over a shared whole state: later checkpoints never happened.
    const chosen = overShared.find((n) => (chainOf(n)?.length ?? 0) >= 2) ?? (overShared[0] as string);
    for (const n of folders) if (n > chosen) rmSync(path.join(ckpt, n), { recursive: true, force: true });
    const resumed = await runCli(["run", pipeline, "--checkpoint-dir", ckpt]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`(resumed from checkpoint ${Number(chosen.slice(4))})`);
    expect(readFileSync(path.join(dir, "out", "alerts.jsonl"), "utf8")).toBe(expected);
  });

  it("parallel keyed subtasks write their changes each over a chain of their own, and resuming at parallelism 1, 2 or 3 writes the uninterrupted output", { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-changelog-p2-"));
    // Longer than the single-threaded case's: a parallel job's checkpoints are fewer per record.
    const pipeline = velocityPipeline(dir, 200_000);
    const reference = await runCli(["run", pipeline]);
    expect(reference.code, reference.stderr).toBe(0);
    const expected = sortedLines(path.join(dir, "out", "alerts.jsonl"));
    expect(expected.length).toBeGreaterThan(10_000);

    const ckpt = path.join(dir, "ckpt");
    const first = await runCli(["run", pipeline, "--checkpoint-dir", ckpt, "--checkpoint-interval", "1", "--parallelism", "2"]);
    expect(first.code, first.stderr).toBe(0);
    expect(sortedLines(path.join(dir, "out", "alerts.jsonl"))).toEqual(expected);
    const folders = readdirSync(ckpt).filter((n) => n.startsWith("chk-")).sort();
    type Task = { task: string; subtask: number; file?: string; bytes: number; changelog?: { chain: string[] } };
    const tasksOf = (n: string) => (JSON.parse(readFileSync(path.join(ckpt, n, "_metadata.json"), "utf8")) as { tasks: Task[]; changelog?: unknown }).tasks;
    const keyedOf = (n: string) => tasksOf(n).filter((t) => t.task === "keyed");
    // The first checkpoint is whole; later ones list, per keyed subtask, a chain of that subtask's own files.
    expect(keyedOf(folders[0] as string).map((t) => t.changelog)).toEqual([undefined, undefined]);
    const chained = folders.filter((n) => keyedOf(n).every((t) => t.changelog !== undefined));
    expect(chained.length).toBeGreaterThan(folders.length / 2);
    for (const n of chained) {
      for (const t of keyedOf(n)) {
        for (const f of t.changelog!.chain) expect(f).toMatch(f.startsWith("../shared/") ? new RegExp(`^\\.\\./shared/heap-\\d{10}-.*-task-keyed-${t.subtask}\\.full$`) : new RegExp(`^\\.\\./chk-\\d{10}/task-keyed-${t.subtask}\\.bin$`));
      }
      // The source task's state stays whole.
      expect(tasksOf(n).find((t) => t.task === "source")?.changelog).toBeUndefined();
    }
    // Not the last one (the end of the input): the resumed runs must replay a part of it.
    const overShared = chained.filter((n) => n !== folders.at(-1) && keyedOf(n).every((t) => t.changelog!.chain[0]!.startsWith("../shared/heap-")));
    expect(overShared.length).toBeGreaterThan(0);

    // "Crash" right after a checkpoint mid-chain over whole states in shared/, then resume at each parallelism.
    const chosen = overShared.find((n) => keyedOf(n).every((t) => t.changelog!.chain.length >= 2)) ?? (overShared[0] as string);
    // A savepoint of it holds each subtask's state resolved, and no chain.
    const original = await readCheckpointFolder(path.join(ckpt, chosen));
    const saved = await readCheckpointFolder(await writeSavepoint(path.join(ckpt, chosen), mkdtempSync(path.join(tmpdir(), "keyflow-changelog-sp-")), "p2"));
    expect(saved.meta.tasks!.filter((t) => t.changelog !== undefined)).toEqual([]);
    const base64 = (c: Awaited<ReturnType<typeof readCheckpointFolder>>) => c.tasks!.map((t) => [t.task, t.subtask, Buffer.from(t.state).toString("base64")]);
    expect(base64(saved)).toEqual(base64(original));
    expect(saved.meta.tasks!.filter((t) => t.task === "keyed").map((t) => t.bytes)).toEqual(original.tasks!.filter((t) => t.task === "keyed").map((t) => t.state.byteLength));

    for (const n of folders) if (n > chosen) rmSync(path.join(ckpt, n), { recursive: true, force: true });
    for (const parallelism of ["1", "2", "3"]) {
      const copy = mkdtempSync(path.join(tmpdir(), `keyflow-changelog-p${parallelism}-`));
      cpSync(dir, copy, { recursive: true });
      const resumed = await runCli(["run", path.join(copy, "pipeline.json"), "--checkpoint-dir", path.join(copy, "ckpt"), "--parallelism", parallelism]);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain(`(resumed from checkpoint ${Number(chosen.slice(4))})`);
      expect(sortedLines(path.join(copy, "out", "alerts.jsonl")), `resumed at parallelism ${parallelism}`).toEqual(expected);
    }
  });
});
