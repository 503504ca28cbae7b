// The checkpoint folder's lease: a live owner is refused to others, a silent one is replaced and then
// fenced at its next write, a dead or released one is replaced at once.
import { mkdtempSync, promises as fs } from "node:fs";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FencedError, FolderLease, isFenced } from "./lease";
import { DirectoryCheckpointStore } from "./checkpoints";

const fresh = () => mkdtempSync(path.join(tmpdir(), "keyflow-lease-"));

/** Pretends `dir`'s newest lease belongs to another live process (this one's parent), renewed `ageMs` ago. */
async function handToOtherProcess(dir: string, ageMs: number): Promise<string> {
  const name = (await fs.readdir(dir)).find((n) => n.startsWith("LEASE-"));
  if (!name) throw new Error("no lease file");
  const file = path.join(dir, name);
  await fs.writeFile(file, JSON.stringify({ pid: process.ppid, host: hostname(), owner: "other", acquiredAt: new Date().toISOString() }) + "\n");
  const at = new Date(Date.now() - ageMs);
  await fs.utimes(file, at, at);
  return file;
}

describe("FolderLease", () => {
  it("refuses a folder whose live owner renewed its lease recently", async () => {
    const dir = fresh();
    await new FolderLease(dir, 10_000).acquire();
    await handToOtherProcess(dir, 1_000);
    await expect(new FolderLease(dir, 10_000).acquire()).rejects.toThrow(/is in use by runner pid \d+ on .* \(lease renewed 1(\.\d)? s ago\)/);
  });

  it("takes over from an owner silent past the lease, which is then fenced at its next write", async () => {
    const dir = fresh();
    const zombie = new FolderLease(dir, 10_000);
    await zombie.acquire();
    await zombie.check("checkpoint 1"); // still the owner
    await handToOtherProcess(dir, 11_000);
    const replacement = new FolderLease(dir, 10_000);
    await replacement.acquire();
    const err: unknown = await zombie.check("checkpoint 7").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencedError);
    expect(isFenced(err)).toBe(true);
    expect(String(err)).toMatch(/fenced: checkpoint folder ".*" was taken over by runner pid \d+ .*\(lease 2; this runner held lease 1.*not writing checkpoint 7/);
    await replacement.check("checkpoint 8"); // the new owner writes on
    await zombie.release(); // a fenced runner leaves the new owner's lease alone
    await replacement.check("checkpoint 9");
    await expect(new FolderLease(dir, 10_000).acquire()).resolves.toBeUndefined(); // same process: free
  });

  it("a released lease or a dead owner's is taken at once", async () => {
    const dir = fresh();
    const first = new FolderLease(dir, 60_000);
    await first.acquire();
    await first.release();
    const second = new FolderLease(dir, 60_000);
    await second.acquire();
    const file = path.join(dir, (await fs.readdir(dir)).find((n) => n.startsWith("LEASE-"))!);
    await fs.writeFile(file, JSON.stringify({ pid: 2 ** 22 + 12_345, host: hostname(), owner: "dead", acquiredAt: new Date().toISOString() }) + "\n");
    await expect(new FolderLease(dir, 60_000).acquire()).resolves.toBeUndefined();
  });

  it("a fenced checkpoint store writes no checkpoint and no commit marker", async () => {
    const dir = fresh();
    const zombie = new DirectoryCheckpointStore(dir, 3, { leaseMs: 10_000 });
    await zombie.acquire();
    await handToOtherProcess(dir, 11_000);
    await new DirectoryCheckpointStore(dir, 3, { leaseMs: 10_000 }).acquire();
    const meta = { format: "keyflow.checkpoint/v1" as const, id: 1, jobId: "j", pipeline: { name: "p", digest: "d" }, createdAt: "", processingTime: 0, stateBytes: 0, sources: {}, sinks: {} };
    await expect(zombie.write(meta, new Uint8Array([1]))).rejects.toThrow(/fenced: .*not writing checkpoint 1/);
    await expect(zombie.markCommitted(1)).rejects.toThrow(/fenced: .*not writing the commit marker of checkpoint 1/);
    expect((await fs.readdir(dir)).filter((n) => n.includes("chk-"))).toEqual([]);
  });
});
