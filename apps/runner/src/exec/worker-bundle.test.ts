import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { keyGroupOf } from "@keyflow/operators";
import { describe, expect, it } from "vitest";
import { pruneStaleBundles, WORKER_BUNDLE_DIR, workerBundle } from "./worker-bundle";

const FIXTURE = new URL("./worker-bundle.fixture.ts", import.meta.url);

function ask(w: Worker, m: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    w.once("message", resolve);
    w.once("error", reject);
    w.postMessage(m);
  });
}

describe("workerBundle", () => {
  it("bundles the workspace's code, leaves npm packages as imports, and runs in a worker", async () => {
    const url = await workerBundle(FIXTURE);
    expect(url.protocol).toBe("file:");
    expect(fileURLToPath(url)).toMatch(/node_modules\/\.cache\/keyflow-workers\/worker-bundle\.fixture-[0-9a-f]{16}\.mjs$/);
    const text = readFileSync(new URL(url.href.replace(/\.mjs$/, ".body.mjs")), "utf8");
    expect(text).toMatch(/from "msgpackr"/);
    expect(text).not.toMatch(/from "@keyflow\/operators"/);
    expect(text).toMatch(/function murmur3_32/);
    const w = new Worker(url);
    try {
      expect(await ask(w, "card-7")).toEqual({ keyGroup: keyGroupOf("card-7", 128), roundTrip: { key: "card-7" } });
    } finally {
      await w.terminate();
    }
  });

  it("is built once per process and named after its content", async () => {
    const [a, b] = await Promise.all([workerBundle(FIXTURE), workerBundle(FIXTURE)]);
    expect(a.href).toBe(b.href);
    expect((await workerBundle(FIXTURE)).href).toBe(a.href);
  });

  it("maps a failure's stack back to the TypeScript source", async () => {
    const w = new Worker(await workerBundle(FIXTURE));
    try {
      const err = (await ask(w, "fail").catch((e: unknown) => e)) as Error;
      expect(err.message).toBe("asked to fail");
      expect(err.stack).toMatch(/failOnRequest \(.*worker-bundle\.fixture\.ts:\d+:\d+\)/);
    } finally {
      await w.terminate();
    }
  });

  it("rejects, naming the module, when it cannot be built, and tries again the next time", async () => {
    const missing = new URL("./no-such-worker.ts", import.meta.url);
    await expect(workerBundle(missing)).rejects.toThrow(/no-such-worker\.ts/);
    await expect(workerBundle(missing)).rejects.toThrow(/no-such-worker\.ts/);
  });

  it("removes a name's bundles unused for a week, with their bodies and maps, and keeps the others", async () => {
    const dir = fileURLToPath(WORKER_BUNDLE_DIR);
    mkdirSync(dir, { recursive: true });
    const name = `prune-probe-${process.pid}`;
    const files = (base: string) => [`${base}.mjs`, `${base}.body.mjs`, `${base}.body.mjs.map`].map((f) => `${dir}${f}`);
    const stale = files(`${name}-aaaaaaaaaaaaaaaa`);
    const fresh = files(`${name}-bbbbbbbbbbbbbbbb`);
    const other = files(`other-${name}-cccccccccccccccc`);
    const interrupted = `${dir}${name}-dddddddddddddddd.mjs.1.2.tmp`;
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3600_000);
    for (const f of [...stale, ...fresh, ...other, interrupted]) writeFileSync(f, "");
    // Only the entry is touched when a bundle is used: its body and map may be older.
    for (const f of [...stale, fresh[1]!, fresh[2]!, ...other, interrupted]) utimesSync(f, eightDaysAgo, eightDaysAgo);
    await pruneStaleBundles(name);
    expect(stale.map(existsSync)).toEqual([false, false, false]);
    expect(existsSync(interrupted)).toBe(false);
    expect(fresh.map(existsSync)).toEqual([true, true, true]);
    expect(other.map(existsSync)).toEqual([true, true, true]);
    await pruneStaleBundles(`other-${name}`);
    expect(other.map(existsSync)).toEqual([false, false, false]);
    for (const f of fresh) rmSync(f);
  });
});
