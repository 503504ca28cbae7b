// `keyflow run --state-backend disk` end to end through the real CLI: parallel subtasks with a
// store each, incremental checkpoints, a restore at another parallelism (2 -> 3) from a mid-stream
// checkpoint whose output equals an uninterrupted heap run, a savepoint that is self-contained and
// restores into the heap backend, and retention that keeps exactly the files retained checkpoints list.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { LocalJob, type PipelineDocument } from "@keyflow/operators";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../test/run-cli";
import { readCheckpointFolder, writeSavepoint } from "../job/checkpoints";
import { materializeDiskState, mergedSnapshot } from "./disk-checkpoints";
import { topKPipeline } from "./testing";

const root = mkdtempSync(path.join(tmpdir(), "keyflow-disk-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const LINES = 40_000;
const input = Array.from({ length: LINES }, (_, i) => JSON.stringify({ card: i < 12_000 ? `c${(i * 7919) % 6000}` : `c${i % 50}`, merchant: `m${(i * 31) % 11}`, ts: 1_700_000_000_000 + i * 100 }) + "\n");
const doc = (retainedCheckpoints: number) => topKPipeline({ name: "disk-cli", input: "in.jsonl", output: "out/ranks.jsonl", k: 3, settings: { retainedCheckpoints } });

function folder(name: string, lines: number, retained = 1000): string {
  const dir = path.join(root, name);
  rmSync(dir, { recursive: true, force: true });
  writeFileSync(path.join(mkdirp(dir), "pipeline.json"), JSON.stringify(doc(retained)));
  writeFileSync(path.join(dir, "in.jsonl"), input.slice(0, lines).join(""));
  return dir;
}
function mkdirp(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}
const sortedOutput = (dir: string) => readFileSync(path.join(dir, "out", "ranks.jsonl"), "utf8").split("\n").filter(Boolean).sort();
const checkpointDirs = (ck: string) => readdirSync(ck).filter((n) => /^chk-\d+$/.test(n)).sort().map((n) => path.join(ck, n));

async function run(dir: string, ...args: string[]): Promise<string> {
  const r = await runCli(["run", path.join(dir, "pipeline.json"), ...args], { env: { KEYFLOW_STATE_DIR: path.join(root, "stores") } });
  if (r.code !== 0) throw new Error(`keyflow run ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

describe("keyflow run --state-backend disk", () => {
  it("checkpoints parallel subtasks incrementally and restores them at another parallelism, equal to an uninterrupted run", { timeout: 180_000 }, async () => {
    const reference = folder("reference", LINES);
    await run(reference);
    const expected = sortedOutput(reference);
    expect(expected.length).toBeGreaterThan(1000);

    for (let attempt = 1; ; attempt++) {
      const dir = folder("rescale", LINES / 2);
      const ck = path.join(dir, "ck");
      await run(dir, "--parallelism", "2", "--state-backend", "disk", "--checkpoint-dir", ck, "--checkpoint-interval", "1");
      const metas = await Promise.all(checkpointDirs(ck).map((d) => readCheckpointFolder(d)));
      // Each keyed subtask has its own chain; later checkpoints add deltas smaller than the full dump.
      const keyed = metas.at(-1)!.meta.tasks!.filter((t) => t.task === "keyed");
      expect(keyed).toHaveLength(2);
      for (const t of keyed) expect(t.disk?.files[0]?.kind).toBe("full");
      const withDelta = metas.filter((m) => m.meta.tasks?.some((t) => t.disk?.files.some((f) => f.kind === "delta")));
      // The file source's position: resume from a checkpoint taken before the end of the input.
      const half = statSync(path.join(dir, "in.jsonl")).size;
      const mid = metas.filter((m) => {
        const pos = m.meta.sources.src as { byte?: number } | undefined;
        return (pos?.byte ?? 0) > 0 && (pos?.byte ?? 0) < half;
      });
      const chosen = mid.at(-1);
      if (chosen === undefined || withDelta.length === 0) {
        if (attempt < 3) continue;
        throw new Error(`no mid-stream incremental checkpoint in ${attempt} attempts`);
      }
      for (const m of withDelta) for (const t of m.meta.tasks!) for (const f of t.disk?.files ?? []) expect(existsSync(path.resolve(m.dir!, f.file))).toBe(true);

      // A savepoint of it: one full file per subtask inside the savepoint, readable by the heap backend.
      const sp = await writeSavepoint(chosen.dir!, path.join(root, "savepoints"), "disk-cli");
      const saved = await readCheckpointFolder(sp);
      for (const t of saved.meta.tasks!.filter((x) => x.disk)) {
        expect(t.disk!.files).toHaveLength(1);
        expect(t.disk!.files[0]!.file.startsWith("..")).toBe(false);
        expect(existsSync(path.join(sp, t.disk!.files[0]!.file))).toBe(true);
      }
      const pipeline = LocalJob.create(doc(1000)).document as PipelineDocument;
      const fromCheckpoint = materializeDiskState(pipeline, chosen.meta, chosen.dir!, mergedSnapshot(chosen.state, chosen.tasks));
      const fromSavepoint = materializeDiskState(pipeline, saved.meta, sp, mergedSnapshot(saved.state, saved.tasks));
      expect(fromSavepoint).toEqual(fromCheckpoint);
      expect(LocalJob.restore(pipeline, fromSavepoint).metrics().top!.keys).toBeGreaterThan(100);

      // "Crash" right after the chosen checkpoint, then resume on the whole input at parallelism 3.
      for (const m of metas) if (m.meta.id > chosen.meta.id) rmSync(m.dir!, { recursive: true, force: true });
      writeFileSync(path.join(dir, "in.jsonl"), input.join(""));
      const out = await run(dir, "--parallelism", "3", "--state-backend", "disk", "--checkpoint-dir", ck);
      expect(out).toContain(`resumed from checkpoint ${chosen.meta.id}`);
      expect(sortedOutput(dir)).toEqual(expected);
      break;
    }
  });

  it("retention deletes the chain files no retained checkpoint lists, and keeps every file they list", { timeout: 120_000 }, async () => {
    const dir = folder("retention", LINES, 2);
    const ck = path.join(dir, "ck");
    await run(dir, "--state-backend", "disk", "--checkpoint-dir", ck, "--checkpoint-interval", "1");
    const retained = await Promise.all(checkpointDirs(ck).map((d) => readCheckpointFolder(d)));
    const what = JSON.stringify(retained.map((c) => ({ id: c.meta.id, files: c.meta.disk?.files })));
    expect(retained, what).toHaveLength(2);
    // A delta holds the keys changed since the previous checkpoint: after line 12 000 only 50 cards
    // change (about 160 entries over their tables), while a full dump holds 18 000.
    const files = retained.flatMap((c) => c.meta.disk!.files);
    expect(files.reduce((n, f) => n + f.entries, 0), what).toBeGreaterThan(6000);
    expect(Math.min(...files.filter((f) => f.kind === "delta").map((f) => f.entries)), what).toBeLessThan(400);
    const listed = new Set(retained.flatMap((c) => c.meta.disk!.files.map((f) => path.resolve(c.dir!, f.file))));
    const shared = readdirSync(path.join(ck, "shared")).map((n) => path.join(ck, "shared", n));
    expect(new Set(shared), what).toEqual(listed);
    expect(existsSync(path.join(root, "stores"))).toBe(true);
    expect(readdirSync(path.join(root, "stores"))).toEqual([]); // each run removes its stores
  });
});
