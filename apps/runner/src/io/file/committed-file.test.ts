// CommittedFile: output becomes visible only at commit, and a restore finishes an interrupted
// commit or cuts off output committed after the restored checkpoint.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../log";
import { CommittedFile } from "./committed-file";

const fresh = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "keyflow-cf-"));
  return { dir, file: path.join(dir, "out.jsonl") };
};
const read = (f: string) => (existsSync(f) ? readFileSync(f, "utf8") : undefined);

describe("CommittedFile", () => {
  it("shows records only after commit, and replaces an earlier run's file on a fresh start", async () => {
    const { dir, file } = fresh();
    writeFileSync(file, "left over from an earlier run\n");
    const cf = new CommittedFile(file, silentLogger);
    await cf.open(undefined);
    await cf.append("a\n");
    expect(read(file)).toBe("left over from an earlier run\n");
    const p1 = await cf.prepareCommit(1);
    expect(read(file)).toBe("left over from an earlier run\n");
    await cf.commit(p1);
    expect(read(file)).toBe("a\n");
    await cf.append("b\n");
    await cf.commit(await cf.prepareCommit(2));
    expect(read(file)).toBe("a\nb\n");
    await cf.commit(await cf.prepareCommit(3)); // an empty epoch
    expect(read(file)).toBe("a\nb\n");
    await cf.close();
    expect(readdirSync(dir)).toEqual(["out.jsonl"]);
  });

  it("an empty run still leaves an (empty) file", async () => {
    const { file } = fresh();
    const cf = new CommittedFile(file, silentLogger);
    await cf.open(undefined);
    await cf.commit(await cf.prepareCommit(1));
    expect(read(file)).toBe("");
  });

  it("a restore finishes a commit interrupted after its checkpoint was written", async () => {
    const { dir, file } = fresh();
    const cf = new CommittedFile(file, silentLogger);
    await cf.open(undefined);
    await cf.append("a\n");
    await cf.commit(await cf.prepareCommit(1));
    await cf.append("b\n");
    const p2 = await cf.prepareCommit(2); // checkpoint 2 written; crash before commit
    expect(read(file)).toBe("a\n");

    const restored = new CommittedFile(file, silentLogger);
    await restored.open(p2);
    expect(read(file)).toBe("a\nb\n");
    await restored.append("c\n");
    await restored.commit(await restored.prepareCommit(3));
    expect(read(file)).toBe("a\nb\nc\n");
    expect(readdirSync(dir)).toEqual(["out.jsonl"]);
  });

  it("a restore cuts off output committed after the restored checkpoint, and drops staged output", async () => {
    const { dir, file } = fresh();
    const cf = new CommittedFile(file, silentLogger);
    await cf.open(undefined);
    await cf.append("a\n");
    const p1 = await cf.prepareCommit(1);
    await cf.commit(p1);
    await cf.append("b\n");
    await cf.commit(await cf.prepareCommit(2)); // committed, but say checkpoint 2 never got marked
    await cf.append("c\n"); // staged only; then the process dies

    const restored = new CommittedFile(file, silentLogger);
    await restored.open(p1);
    expect(read(file)).toBe("a\n");
    expect(readdirSync(dir)).toEqual(["out.jsonl"]);
    await restored.append("b2\n");
    await restored.commit(await restored.prepareCommit(3));
    expect(read(file)).toBe("a\nb2\n");
  });

  it("restoring the same checkpoint twice is harmless", async () => {
    const { file } = fresh();
    const cf = new CommittedFile(file, silentLogger);
    await cf.open(undefined);
    await cf.append("a\n");
    const p1 = await cf.prepareCommit(1);
    for (let i = 0; i < 2; i++) await new CommittedFile(file, silentLogger).open(p1);
    expect(read(file)).toBe("a\n");
  });
});
