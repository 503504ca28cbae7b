// DirectoryCheckpointStore's write: a checkpoint folder exists whole or not at all, now that its
// files are written and fsynced at once; changelog checkpoints restored from their chains, kept by
// retention while a retained one replays them, and copied whole into savepoints.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { LocalJob, type PipelineDocumentInput } from "@keyflow/operators";
import { ChangelogCompactor } from "./changelog-compactor";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, readCheckpointFolder, writePieces, writeSavepoint, type CheckpointMeta } from "./checkpoints";

const meta = (id: number): CheckpointMeta => ({ format: CHECKPOINT_FORMAT, id, jobId: "job", pipeline: { name: "p", digest: "-" }, createdAt: new Date(0).toISOString(), processingTime: 0, stateBytes: 3, sources: {}, sinks: {} });

describe("DirectoryCheckpointStore.write", () => {
  it("writes every task's file and the metadata into one folder, renamed into place", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    const tasks = [0, 1, 2].map((subtask) => ({ task: "keyed" as const, subtask, state: new Uint8Array([subtask, 7, 7]), alignmentMs: 0 }));
    await store.write(meta(1), [...tasks, { task: "source", subtask: 0, alignmentMs: 0 }]);
    const folder = readdirSync(dir).filter((f) => f.startsWith("chk-"));
    expect(folder).toHaveLength(1);
    const files = readdirSync(path.join(dir, folder[0]!)).sort();
    expect(files).toEqual(["_metadata.json", "task-keyed-0.bin", "task-keyed-1.bin", "task-keyed-2.bin"]);
    expect([...readFileSync(path.join(dir, folder[0]!, "task-keyed-2.bin"))]).toEqual([2, 7, 7]);
    await store.release();
  });

  it("leaves no folder, finished or in progress, when one file cannot be written, and says why", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    const before = readdirSync(dir);
    // A state whose buffer was handed away (detached): its write fails while the others go on.
    const gone = new Uint8Array(8);
    structuredClone(gone.buffer, { transfer: [gone.buffer] });
    const tasks = [{ task: "keyed" as const, subtask: 0, state: new Uint8Array(1 << 20), alignmentMs: 0 }, { task: "keyed" as const, subtask: 1, state: gone, alignmentMs: 0 }];
    await expect(store.write(meta(2), tasks)).rejects.toThrow(/detached|out of bounds|length/i);
    expect(readdirSync(dir)).toEqual(before);
    await store.release();
  });

  it("writes a snapshot given in pieces as their concatenation, over 1 024 pieces and empty ones included", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    const pieces = Array.from({ length: 2500 }, (_, i) => new Uint8Array(i % 7).fill(i & 0xff));
    const whole = Buffer.concat(pieces);
    await store.write(meta(3), { pieces, byteLength: whole.byteLength });
    const read = await readCheckpointFolder(path.join(dir, readdirSync(dir).find((f) => f.startsWith("chk-"))!));
    expect(Buffer.from(read.state!).equals(whole)).toBe(true);
    await store.release();
  });
});

describe("DirectoryCheckpointStore.acquire", () => {
  it("removes the shared folder's writes a killed runner left half done, and nothing else", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const shared = path.join(dir, "shared");
    mkdirSync(shared, { recursive: true });
    const kept = ["heap-0000000003-x.full", "heap-0000000004-x-ahead2.delta", "keyed-0-0000000004-y.delta"];
    const interrupted = [".heap-x.inprogress-0a1b2c3d", ".heap-x-ahead7.inprogress-deadbeef"];
    for (const f of [...kept, ...interrupted]) writeFileSync(path.join(shared, f), "bytes");
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    try {
      expect(readdirSync(shared).sort()).toEqual([...kept].sort());
    } finally {
      await store.release();
    }
    // A folder without a shared folder yet is fine.
    const fresh = new DirectoryCheckpointStore(mkdtempSync(path.join(tmpdir(), "keyflow-ck-")), 3);
    await fresh.acquire();
    await fresh.release();
  });
});

describe("DirectoryCheckpointStore.stageTaskState", () => {
  it("writes task files ahead into the folder in progress; write() adds the rest and renames it, without writing them again", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    store.stageTaskState(4, "task-keyed-0.bin", new Uint8Array([0, 9]));
    store.stageTaskState(4, "task-source-0.bin", new Uint8Array([5]));
    // write() is handed other bytes for the staged files: the staged ones are what the folder holds.
    const tasks = [
      { task: "source" as const, subtask: 0, state: new Uint8Array([6]), alignmentMs: 0 },
      { task: "keyed" as const, subtask: 0, state: new Uint8Array([1]), alignmentMs: 0 },
      { task: "keyed" as const, subtask: 1, state: new Uint8Array([1, 1]), alignmentMs: 0 },
    ];
    await store.write(meta(4), tasks);
    expect(readdirSync(dir).filter((n) => n.startsWith(".chk-"))).toEqual([]);
    const folder = path.join(dir, "chk-0000000004");
    expect(readdirSync(folder).sort()).toEqual(["_metadata.json", "task-keyed-0.bin", "task-keyed-1.bin", "task-source-0.bin"]);
    expect([...readFileSync(path.join(folder, "task-keyed-0.bin"))]).toEqual([0, 9]);
    expect([...readFileSync(path.join(folder, "task-source-0.bin"))]).toEqual([5]);
    expect([...readFileSync(path.join(folder, "task-keyed-1.bin"))]).toEqual([1, 1]);
    await store.release();
  });

  it("a staged file that fails fails write(), naming why, and leaves no folder; an aborted checkpoint's staged folder goes at the next commit", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const store = new DirectoryCheckpointStore(dir, 3);
    await store.acquire();
    const gone = new Uint8Array(8);
    structuredClone(gone.buffer, { transfer: [gone.buffer] });
    store.stageTaskState(1, "task-keyed-0.bin", gone);
    await expect(store.write(meta(1), [{ task: "keyed", subtask: 0, state: new Uint8Array(1), alignmentMs: 0 }])).rejects.toThrow(/detached|out of bounds|length/i);
    expect(readdirSync(dir).filter((n) => n.includes("chk-"))).toEqual([]);

    store.stageTaskState(2, "task-keyed-0.bin", new Uint8Array([1])); // checkpoint 2 is aborted
    const staging = () => readdirSync(dir).filter((n) => n.startsWith(".chk-0000000002."));
    for (const until = Date.now() + 10_000; staging().length === 0 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(staging()).toHaveLength(1);
    await store.write(meta(3), [{ task: "keyed", subtask: 0, state: new Uint8Array([3]), alignmentMs: 0 }]);
    await store.markCommitted(3);
    expect(readdirSync(dir).filter((n) => n.includes("chk-")).sort()).toEqual(["chk-0000000003"]);
    await store.release();
  });
});

describe("writePieces", () => {
  it("goes on from where a gathered write stopped, mid-piece or between pieces", async () => {
    const pieces = [Uint8Array.from([1, 2, 3]), Uint8Array.from([4]), new Uint8Array(0), Uint8Array.from([5, 6, 7, 8, 9])];
    const written: number[] = [];
    // A system that takes at most 2 bytes per write.
    const handle = {
      writev: async (buffers: Uint8Array[]) => {
        let n = 0;
        for (const b of buffers) for (const x of b) if (n < 2) (written.push(x), n++);
        return { bytesWritten: n, buffers };
      },
    };
    await writePieces(handle as never, pieces);
    expect(written).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await expect(writePieces({ writev: async (buffers: Uint8Array[]) => ({ bytesWritten: 0, buffers }) } as never, pieces)).rejects.toThrow(/wrote nothing/);
  });
});


describe("changelog checkpoints in a folder", () => {
  // A keyed pipeline whose state is mostly unchanged between checkpoints.
  const doc: PipelineDocumentInput = {
    format: "keyflow.pipeline/v1",
    name: "changelog",
    nodes: [
      { id: "pay", type: "source.file", params: { path: "pay.jsonl", timestampField: "ts", maxOutOfOrdernessMs: 0 } },
      { id: "byCard", type: "keyBy", params: { field: "card" } },
      { id: "vel", type: "velocity", params: { threshold: 3, windowMs: 1_000, mode: "eager" } },
      { id: "out", type: "sink.file", params: { path: "out.jsonl" } },
    ],
    edges: [
      { from: "pay", to: "byCard" },
      { from: "byCard", to: "vel" },
      { from: "vel", to: "out" },
    ],
  };
  /** The job's state as a restore gives it back (a snapshot of a restored job: the form the checks compare). */
  const restoredNow = (job: LocalJob) => LocalJob.restore(doc, job.snapshot()).snapshot();
  const feed = (job: LocalJob, cards: number[], ts: number) => {
    for (const c of cards) job.pushValue("pay", { card: `c${c}`, ts }, { partition: 0 });
    job.drain();
  };
  /** Checkpoints 1 (whole) to 4 (changes over 1 to 3), each folder's chain as the driver writes it. */
  async function chain(dir: string, retained: number) {
    // Named relative to the working folder: retention compares the folders a chain names with its own.
    const store = new DirectoryCheckpointStore(path.relative(process.cwd(), dir), retained);
    await store.acquire();
    const job = LocalJob.create(doc);
    feed(job, Array.from({ length: 500 }, (_, i) => i), 1);
    await store.write(meta(1), job.snapshotPieces(undefined, "whole"));
    const links = ["../chk-0000000001/state.bin"];
    for (const id of [2, 3, 4]) {
      feed(job, [id, id + 10], id);
      await store.write({ ...meta(id), changelog: { chain: [...links] } }, job.snapshotPieces(undefined, "changes"));
      await store.markCommitted(id);
      links.push(`../chk-${String(id).padStart(10, "0")}/state.bin`);
    }
    return { store, job };
  }

  it("restores the newest from its chain, keeps what a retained one replays, and names a missing link", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const { store, job } = await chain(dir, 1);
    // Only checkpoint 4 is retained, and it replays 1 to 3: all stay.
    expect(readdirSync(dir).filter((f) => f.startsWith("chk-"))).toHaveLength(4);
    const whole = readFileSync(path.join(dir, "chk-0000000001", "state.bin")).byteLength;
    const changes = readFileSync(path.join(dir, "chk-0000000004", "state.bin")).byteLength;
    expect(changes).toBeLessThan(whole / 10);
    const latest = await store.latest();
    expect(latest?.meta.id).toBe(4);
    expect(Buffer.from(LocalJob.restore(doc, latest!.state!).snapshot()).equals(Buffer.from(restoredNow(job)))).toBe(true);
    // A new whole checkpoint: the old chain is no longer needed.
    await store.write(meta(5), job.snapshotPieces(undefined, "whole"));
    await store.markCommitted(5);
    expect(readdirSync(dir).filter((f) => f.startsWith("chk-"))).toEqual(["chk-0000000005"]);
    await store.release();

    const broken = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const second = await chain(broken, 10);
    rmSync(path.join(broken, "chk-0000000002"), { recursive: true });
    await expect(second.store.latest()).rejects.toThrow(/holds only the changes since earlier checkpoints, and "\.\.\/chk-0000000002\/state\.bin" \(changes it replays\) is missing/);
    await second.store.release();
  });

  it("copies a changelog checkpoint into a savepoint that holds its whole state and nothing else", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const { store, job } = await chain(dir, 10);
    const savepoint = await writeSavepoint(path.join(dir, "chk-0000000004"), path.join(dir, "savepoints"), "job");
    await store.release();
    rmSync(path.join(dir, "chk-0000000001"), { recursive: true });
    const read = await readCheckpointFolder(savepoint);
    expect(read.meta.changelog).toBeUndefined();
    expect(Buffer.from(LocalJob.restore(doc, read.state!).snapshot()).equals(Buffer.from(restoredNow(job)))).toBe(true);
  });

  it("resolves a checkpoint's chain in a worker thread (ChangelogCompactor) into the whole state a restore reads, and names a missing link", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const { store, job } = await chain(dir, 10);
    const compactor = new ChangelogCompactor();
    try {
      const [only, ...more] = await compactor.resolve(path.join(dir, "chk-0000000004"), ["state.bin"]);
      expect(more).toEqual([]);
      expect(only!.file).toBe("state.bin");
      const resolved = only!.state;
      expect(Buffer.from(resolved).equals(Buffer.from((await readCheckpointFolder(path.join(dir, "chk-0000000004"))).state!))).toBe(true);
      expect(Buffer.from(LocalJob.restore(doc, resolved).snapshot()).equals(Buffer.from(restoredNow(job)))).toBe(true);
      // Written as the chain's new start, it stands for checkpoints 1 to 4.
      const file = await store.writeSharedState({ pieces: [resolved], byteLength: resolved.byteLength }, "c", () => 5);
      feed(job, [7], 9);
      await store.write({ ...meta(5), changelog: { chain: [`../${file}`] } }, job.snapshotPieces(undefined, "changes"));
      expect(Buffer.from(LocalJob.restore(doc, (await store.latest())!.state!).snapshot()).equals(Buffer.from(restoredNow(job)))).toBe(true);
      rmSync(path.join(dir, "chk-0000000003"), { recursive: true });
      await expect(compactor.resolve(path.join(dir, "chk-0000000004"), ["state.bin"])).rejects.toThrow(/"\.\.\/chk-0000000003\/state\.bin" \(changes it replays\) is missing/);
    } finally {
      await compactor.close();
      await store.release();
    }
  });

  it("keeps the process alive while the compactor works, and not while it idles", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const { store } = await chain(dir, 10);
    await store.release();
    // Nothing else holds the event loop of this process: it must wait for the answer, then exit by itself.
    const script = `import { ChangelogCompactor } from ${JSON.stringify(path.join(import.meta.dirname, "changelog-compactor.ts"))};
const [resolved] = await new ChangelogCompactor().resolve(${JSON.stringify(path.join(dir, "chk-0000000004"))}, ["state.bin"]);
console.log("resolved " + resolved.state.byteLength);`;
    const file = path.join(dir, "compact.mts");
    writeFileSync(file, script);
    const child = spawnSync(process.execPath, ["--import", "tsx", file], { encoding: "utf8", timeout: 60_000 });
    expect(child.status, child.stderr).toBe(0);
    expect(child.stdout).toMatch(/^resolved [1-9]\d*$/m);
  });

  it("writes a whole state beside the checkpoints, named by the id read once it is written, and retention keeps it while a checkpoint lists it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "keyflow-ck-"));
    const { store, job } = await chain(dir, 1);
    let next = 5;
    const file = await store.writeSharedState(job.snapshotPieces(), "t", () => next);
    expect(file).toBe("shared/heap-0000000005-t.full");
    expect(readdirSync(path.join(dir, "shared"))).toEqual(["heap-0000000005-t.full"]);
    feed(job, [99], 9);
    await store.write({ ...meta(5), changelog: { chain: [`../${file}`] } }, job.snapshotPieces(undefined, "changes"));
    await store.markCommitted(5);
    // Checkpoint 5 builds on the shared file alone: 1 to 4 go, the file stays.
    expect(readdirSync(dir).filter((f) => f.startsWith("chk-"))).toEqual(["chk-0000000005"]);
    expect(readdirSync(path.join(dir, "shared"))).toEqual(["heap-0000000005-t.full"]);
    expect(Buffer.from(LocalJob.restore(doc, (await store.latest())!.state!).snapshot()).equals(Buffer.from(restoredNow(job)))).toBe(true);
    next = 7;
    await store.write(meta(6), job.snapshotPieces(undefined, "whole"));
    await store.markCommitted(6);
    expect(readdirSync(path.join(dir, "shared"))).toEqual([]);
    await store.release();
  });
});
