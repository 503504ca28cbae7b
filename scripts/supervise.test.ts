// The supervisor of `npm start` with real child processes: one killed with SIGKILL comes back (and
// the log says so) while the other keeps its pid; backoff grows; stop() ends everything for good.
import { afterEach, describe, expect, it } from "vitest";
import { backoffDelayMs, supervise, type Supervisor } from "./supervise";

/** A child that stays up until killed, printing its pid once. */
const SERVE = ["-e", "console.log('up ' + process.pid); setInterval(() => {}, 1000)"];
/** A child that starts a grandchild of its own (as the web process starts `next start`), printing both pids. */
const PARENT = ["-e", "const c = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); console.log('up ' + process.pid + ' ' + c.pid); setInterval(() => {}, 1000)"];
/** A child that exits at once with code 3. */
const CRASH = ["-e", "process.exit(3)"];

const until = async (what: string, ok: () => boolean, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const alive = (pid: number | undefined) => {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("supervise", () => {
  let sup: Supervisor | undefined;
  afterEach(async () => {
    await sup?.stop(1_000);
    sup = undefined;
  });

  it("restarts a child killed with SIGKILL, says so, and leaves the other one running", async () => {
    const lines: string[] = [];
    sup = supervise([{ name: "runner", args: SERVE }, { name: "web", args: SERVE }], { policy: { initialDelayMs: 100 }, log: (l) => lines.push(l) });
    await until("both children up", () => lines.filter((l) => l.includes("] up ")).length === 2);
    const [runner, web] = sup.children();
    const runnerPid = runner?.process?.pid;
    const webPid = web?.process?.pid;
    process.kill(runnerPid ?? -1, "SIGKILL");
    await until("the runner's restart", () => sup?.children()[0]?.process?.pid !== undefined && sup.children()[0]?.process?.pid !== runnerPid);
    expect(lines).toContain("[start] runner exited (SIGKILL); restarting in 0.1 s (attempt 2)");
    await until("the new runner's output", () => lines.filter((l) => l.startsWith("[runner] up ")).length === 2);
    expect(sup.children()[1]?.process?.pid).toBe(webPid);
    expect(alive(webPid)).toBe(true);
    expect(sup.children()[0]?.attempt).toBe(2);
  });

  it("takes what a killed child started down with it, so nothing it left holds on to its port", async () => {
    const lines: string[] = [];
    sup = supervise([{ name: "web", args: PARENT }], { policy: { initialDelayMs: 100 }, log: (l) => lines.push(l) });
    await until("the child and its grandchild", () => lines.some((l) => l.startsWith("[web] up ")));
    const [pid, grandchild] = (lines.find((l) => l.startsWith("[web] up ")) ?? "").split(" ").slice(2).map(Number);
    expect(alive(grandchild)).toBe(true);
    process.kill(pid ?? -1, "SIGKILL");
    await until("the grandchild gone", () => !alive(grandchild));
    await until("the restart", () => lines.filter((l) => l.startsWith("[web] up ")).length === 2);
  });

  it("backs off exponentially while a child keeps exiting", async () => {
    expect([2, 3, 4, 5, 12].map((a) => backoffDelayMs({ initialDelayMs: 1_000, maxDelayMs: 30_000, resetAfterMs: 60_000 }, a))).toEqual([1_000, 2_000, 4_000, 8_000, 30_000]);
    const lines: string[] = [];
    sup = supervise([{ name: "runner", args: CRASH }], { policy: { initialDelayMs: 50 }, log: (l) => lines.push(l) });
    await until("three restarts", () => lines.filter((l) => l.includes("restarting")).length >= 3);
    expect(lines.filter((l) => l.includes("restarting")).slice(0, 3)).toEqual([
      "[start] runner exited (code 3); restarting in 0.1 s (attempt 2)",
      "[start] runner exited (code 3); restarting in 0.1 s (attempt 3)",
      "[start] runner exited (code 3); restarting in 0.2 s (attempt 4)",
    ]);
  });

  it("stop() ends every child and restarts none", async () => {
    const lines: string[] = [];
    sup = supervise([{ name: "runner", args: SERVE }, { name: "web", args: SERVE }], { policy: { initialDelayMs: 50 }, log: (l) => lines.push(l) });
    await until("both children up", () => lines.filter((l) => l.includes("] up ")).length === 2);
    const pids = sup.children().map((c) => c.process?.pid);
    await sup.stop(1_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(pids.map(alive)).toEqual([false, false]);
    expect(lines.some((l) => l.includes("restarting"))).toBe(false);
    expect(sup.children().every((c) => c.process === undefined)).toBe(true);
  });
});
