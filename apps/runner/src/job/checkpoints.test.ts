// DirectoryCheckpointStore's write: a checkpoint folder exists whole or not at all, now that its
// files are written and fsynced at once.
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_FORMAT, DirectoryCheckpointStore, readCheckpointFolder, writePieces, type CheckpointMeta } from "./checkpoints";

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

