// Who owns a checkpoint folder, and fencing of the runner that lost it. The owner holds a lease: a
// file `LEASE-<epoch>` created exclusively (O_EXCL, so two runners never get the same epoch) and
// touched every few seconds. A runner that stops touching it for `leaseMs` (stopped with SIGSTOP,
// hung, cut off from shared storage) can be replaced: the replacement creates `LEASE-<epoch + 1>`.
// Should the old runner resume (a zombie), every checkpoint write and commit marker first checks
// that no newer lease exists, and it stops with a FencedError instead of writing over the new
// owner's checkpoints. A runner that died (same host, its pid gone) is replaced at once, so a
// restart after a crash never waits for the lease. Lease files are never rewritten by anyone but
// their owner, and only older ones are deleted, so the newest epoch always stays visible.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { z } from "zod";
import { isNotFound, writeFileAtomic } from "../io/file/atomic";
import type { Logger } from "../log";

/** A runner found that another one took over what it was writing: it must stop, not retry or restart. */
export class FencedError extends Error {
  override readonly name = "FencedError";
}

/** Whether `err` (or an error it wraps) is a FencedError: such a job must not be restarted. */
export function isFenced(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (e instanceof FencedError) return true;
    if (typeof e === "object" && "name" in e && e.name === "FencedError") return true;
    e = typeof e === "object" && "cause" in e ? e.cause : undefined;
  }
  return false;
}

/** Default lease: a live runner renews every quarter of it; one silent this long can be replaced. */
export const DEFAULT_LEASE_MS = 30_000;

const LEASE = /^LEASE-(\d+)$/;
const leaseName = (epoch: number) => `LEASE-${String(epoch).padStart(10, "0")}`;
const leaseSchema = z.object({ pid: z.number().int(), host: z.string(), owner: z.string(), acquiredAt: z.string(), released: z.boolean().optional() });
type LeaseContent = z.infer<typeof leaseSchema>;

export class FolderLease {
  private epoch: number | undefined;
  private owner = "";
  private timer: NodeJS.Timeout | undefined;
  private fencedBy: number | undefined;

  constructor(
    private readonly dir: string,
    private readonly leaseMs: number = DEFAULT_LEASE_MS,
    private readonly log?: Logger,
  ) {}

  private async epochs(): Promise<number[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    return names
      .map((n) => LEASE.exec(n)?.[1])
      .filter((m): m is string => m !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  private async read(epoch: number): Promise<{ content: LeaseContent | undefined; ageMs: number } | undefined> {
    const file = path.join(this.dir, leaseName(epoch));
    try {
      const [text, stat] = await Promise.all([fs.readFile(file, "utf8"), fs.stat(file)]);
      let content: LeaseContent | undefined;
      try {
        const parsed = leaseSchema.safeParse(JSON.parse(text));
        content = parsed.success ? parsed.data : undefined;
      } catch {
        content = undefined; // torn or foreign: judged by its age alone
      }
      return { content, ageMs: Date.now() - stat.mtimeMs };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Takes the folder: at once when it is free, released or its owner died; after `leaseMs` of silence otherwise. */
  async acquire(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    const all = await this.epochs();
    const newest = all[all.length - 1] ?? 0;
    const held = newest > 0 ? await this.read(newest) : undefined;
    if (held) {
      const c = held.content;
      const died = c !== undefined && c.host === hostname() && c.pid !== process.pid && !isAlive(c.pid);
      const free = c?.released === true || died || (c !== undefined && c.host === hostname() && c.pid === process.pid);
      if (!free) {
        const who = c ? `runner pid ${c.pid} on ${c.host}` : "another runner";
        const renewed = `${Math.round(held.ageMs / 100) / 10} s ago`;
        if (held.ageMs < this.leaseMs) {
          throw new Error(
            `checkpoint folder "${this.dir}" is in use by ${who} (lease renewed ${renewed}); stop it or choose another --checkpoint-dir (a runner that stops renewing for ${this.leaseMs / 1000} s can be replaced)`,
          );
        }
        this.log?.warn(`taking over checkpoint folder "${this.dir}" from ${who}, whose lease was last renewed ${renewed} (over ${this.leaseMs / 1000} s): it is fenced and stops if it resumes`);
      }
    }
    const epoch = newest + 1;
    const owner = randomBytes(8).toString("hex");
    const content: LeaseContent = { pid: process.pid, host: hostname(), owner, acquiredAt: new Date().toISOString() };
    try {
      await fs.writeFile(path.join(this.dir, leaseName(epoch)), JSON.stringify(content) + "\n", { flag: "wx" });
    } catch (err) {
      if (typeof err === "object" && err !== null && "code" in err && err.code === "EEXIST") {
        throw new Error(`checkpoint folder "${this.dir}" was just taken by another runner (lease ${epoch}); choose another --checkpoint-dir or stop that runner`);
      }
      throw err;
    }
    this.epoch = epoch;
    this.owner = owner;
    this.fencedBy = undefined;
    // Older leases are dropped: a zombie holding one of them sees this newer epoch and stops.
    for (const e of all) await fs.rm(path.join(this.dir, leaseName(e)), { force: true });
    await fs.rm(path.join(this.dir, "LOCK"), { force: true }); // the lock file of runners before leases
    this.timer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.leaseMs / 4)));
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    if (this.epoch === undefined || this.fencedBy !== undefined) return;
    try {
      const newer = await this.newerEpoch();
      if (newer !== undefined) {
        this.fencedBy = newer;
        this.log?.warn(`checkpoint folder "${this.dir}" was taken over by another runner (lease ${newer}; this runner holds ${this.epoch}): fenced`);
        return;
      }
      const now = new Date();
      await fs.utimes(path.join(this.dir, leaseName(this.epoch)), now, now);
    } catch (err) {
      this.log?.warn(`renewing the lease on checkpoint folder "${this.dir}" failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** A newer epoch than this runner's, or this runner's lease file gone (removed by a newer owner). */
  private async newerEpoch(): Promise<number | undefined> {
    const mine = this.epoch;
    if (mine === undefined) return undefined;
    const all = await this.epochs();
    const newest = all[all.length - 1];
    if (newest !== undefined && newest > mine) return newest;
    if (!all.includes(mine)) return newest ?? mine + 1;
    return undefined;
  }

  /** Throws a FencedError when another runner took the folder over; `what`: what was about to be written. */
  async check(what: string): Promise<void> {
    if (this.epoch === undefined) return;
    this.fencedBy ??= await this.newerEpoch();
    if (this.fencedBy === undefined) return;
    const newer = await this.read(this.fencedBy).catch(() => undefined);
    const who = newer?.content ? `runner pid ${newer.content.pid} on ${newer.content.host}` : "another runner";
    throw new FencedError(
      `fenced: checkpoint folder "${this.dir}" was taken over by ${who} (lease ${this.fencedBy}; this runner held lease ${this.epoch} and stopped renewing it, e.g. it was stopped or hung); not writing ${what}. This runner stops: the new owner continues the job`,
    );
  }

  /** Marks the lease released (the next runner starts at once), unless another runner took it over. */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const epoch = this.epoch;
    this.epoch = undefined;
    if (epoch === undefined || this.fencedBy !== undefined) return;
    this.epoch = epoch;
    const newer = await this.newerEpoch();
    this.epoch = undefined;
    if (newer !== undefined) return;
    const content: LeaseContent = { pid: process.pid, host: hostname(), owner: this.owner, acquiredAt: new Date().toISOString(), released: true };
    await writeFileAtomic(path.join(this.dir, leaseName(epoch)), JSON.stringify(content) + "\n");
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return typeof err === "object" && err !== null && "code" in err && err.code === "EPERM";
  }
}
