// Workers whose bundle cannot be built (./worker-bundle.ts: a read-only install, a missing esbuild
// binary) start from source through tsx: a parallel job's keyed subtasks and the changelog compactor
// still do their work, and say so once, as a warning.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { PipelineDocument } from "@keyflow/operators";
import { readEnv } from "../env";
import { createConnectors } from "../io/connectors";
import { ChangelogCompactor } from "../job/changelog-compactor";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, TransientCheckpointStore, type CheckpointMeta } from "../job/checkpoints";
import { systemClock } from "../job/clock";
import { JobDriver } from "../job/driver";
import { createLogger } from "../log";
import { benchPipeline, benchRecords } from "./bench";

vi.mock("./worker-bundle", () => ({
  workerBundle: () => Promise.reject(new Error("EROFS: read-only file system, mkdir 'node_modules/.cache/keyflow-workers' (test)")),
}));

async function run(dir: string, doc: PipelineDocument, lines: string[]) {
  const log = createLogger("warn", "", (l) => lines.push(l));
  const connectors = createConnectors({ doc, jobId: doc.name, baseDir: dir, env: readEnv(), clock: systemClock, log });
  return new JobDriver({ jobId: doc.name, doc, connectors, checkpoints: new TransientCheckpointStore(), clock: systemClock, log }).run();
}

const sorted = (dir: string, file: string) => readFileSync(path.join(dir, file), "utf8").split("\n").filter((l) => l !== "").sort();

describe("workers without their bundle", () => {
  it("keyed subtasks start from source, warn once, and write what parallelism 1 writes", async () => {
    const dirs = [1, 2].map(() => mkdtempSync(path.join(tmpdir(), "keyflow-par-src-")));
    for (const d of dirs) writeFileSync(path.join(d, "payments.jsonl"), benchRecords(5_000, 200));
    const one: string[] = [];
    const two: string[] = [];
    expect((await run(dirs[0]!, benchPipeline(1), one)).status).toBe("finished");
    expect((await run(dirs[1]!, benchPipeline(2), two)).status).toBe("finished");
    expect(one.filter((l) => l.includes("bundle"))).toEqual([]);
    const warnings = two.filter((l) => l.includes("bundle"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/keyed subtasks start from source \(slower\): their bundle could not be built: EROFS: read-only file system/);
    for (const f of ["out/alerts.jsonl", "out/sums.jsonl", "out/bench.dlq.jsonl"]) {
      const expected = sorted(dirs[0]!, f);
      expect(expected.length).toBeGreaterThan(0);
      expect({ f, lines: sorted(dirs[1]!, f) }).toEqual({ f, lines: expected });
    }
  });

  it("the changelog compactor starts from source, warns once, and resolves a checkpoint's state, twice", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-src-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    const meta: CheckpointMeta = { format: CHECKPOINT_FORMAT, id: 1, jobId: "job", pipeline: { name: "p", digest: "-" }, createdAt: new Date(0).toISOString(), processingTime: 0, stateBytes: 3, sources: {}, sinks: {} };
    await store.write(meta, new Uint8Array([1, 7, 7]));
    await store.release();
    const lines: string[] = [];
    const compactor = new ChangelogCompactor(createLogger("warn", "", (l) => lines.push(l)));
    try {
      const folder = path.join(dir, "chk-0000000001");
      for (let i = 0; i < 2; i++) {
        const states = await compactor.resolve(folder, ["state.bin"]);
        expect(states.map((s) => [s.file, [...s.state]])).toEqual([["state.bin", [1, 7, 7]]]);
      }
    } finally {
      await compactor.close();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/the changelog compactor starts from source \(slower\): its bundle could not be built: EROFS/);
  });
});
