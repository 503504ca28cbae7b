// A JSON-lines file that changes only at checkpoints (the file half of two-phase commit). During an
// epoch, lines go to a hidden staging file beside the target; prepareCommit renames it to a pending
// file named after the checkpoint; commit writes "committed prefix + pending" to a temporary file
// and renames it over the target. Readers therefore only ever see whole, checkpointed output.
// The checkpoint stores the prefix length and the pending file, so a restore can finish a commit
// that was interrupted, or cut off output written after the checkpoint being restored.
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { z } from "zod";
import type { JsonValue } from "@keyflow/operators";
import type { Logger } from "../../log";
import { fileSize, fsyncDir, isNotFound, tempPathFor } from "./atomic";

const preparedSchema = z.object({
  pending: z.string().nullable(),
  baseLength: z.number().int().nonnegative(),
  pendingLength: z.number().int().nonnegative(),
});
type Prepared = z.infer<typeof preparedSchema>;

export class CommittedFile {
  private committedLength = 0;
  /** No checkpoint restored: the first commit replaces whatever an earlier run left. */
  private fresh = true;
  private staging: fs.FileHandle | undefined;
  private stagingBytes = 0;
  private readonly dir: string;
  private readonly base: string;

  constructor(
    /** Absolute path of the output file. */
    readonly file: string,
    private readonly log: Logger,
  ) {
    this.dir = path.dirname(file);
    this.base = path.basename(file);
  }

  private get stagingPath(): string {
    return path.join(this.dir, `.${this.base}.staging`);
  }
  private pendingPath(checkpointId: number): string {
    return path.join(this.dir, `.${this.base}.pending-${checkpointId}`);
  }

  async open(restored: JsonValue | undefined): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    if (restored !== undefined) await this.recover(preparedSchema.parse(restored));
    await this.removeLeftovers();
  }

  /** Brings the file to the state of the restored checkpoint: finishes or cuts off commits. */
  private async recover(prepared: Prepared): Promise<void> {
    const expected = prepared.baseLength + prepared.pendingLength;
    const pending = prepared.pending === null ? undefined : path.join(this.dir, prepared.pending);
    const pendingThere = pending !== undefined && (await fileSize(pending)) !== undefined;
    const size = await fileSize(this.file);
    const have = size ?? 0;
    if (pendingThere && have === prepared.baseLength) {
      await this.rewrite(prepared.baseLength, pending); // the commit was interrupted: finish it
    } else if (have > expected) {
      await this.rewrite(expected, undefined); // output committed after this checkpoint: it will be produced again
    } else if (have < expected) {
      this.log.warn(`"${this.file}" is shorter than its checkpoint says (${have} < ${expected} bytes): it was changed outside Keyflow; appending after what is there`);
      if (pendingThere && have < prepared.baseLength) await this.rewrite(have, pending);
    }
    if (pending !== undefined) await fs.rm(pending, { force: true });
    this.committedLength = (await fileSize(this.file)) ?? 0;
    this.fresh = size === undefined && !pendingThere;
  }

  async append(text: string): Promise<void> {
    if (text.length === 0) return;
    if (!this.staging) {
      this.staging = await fs.open(this.stagingPath, "w");
      this.stagingBytes = 0;
    }
    const { bytesWritten } = await this.staging.write(text);
    this.stagingBytes += bytesWritten;
  }

  async prepareCommit(checkpointId: number): Promise<Prepared> {
    if (!this.staging) return { pending: null, baseLength: this.committedLength, pendingLength: 0 };
    const handle = this.staging;
    this.staging = undefined;
    await handle.sync();
    await handle.close();
    const pending = this.pendingPath(checkpointId);
    await fs.rename(this.stagingPath, pending);
    return { pending: path.basename(pending), baseLength: this.committedLength, pendingLength: this.stagingBytes };
  }

  async commit(prepared: JsonValue): Promise<void> {
    const p = preparedSchema.parse(prepared);
    const pending = p.pending === null ? undefined : path.join(this.dir, p.pending);
    if (pending !== undefined) {
      await this.rewrite(this.fresh ? 0 : p.baseLength, pending);
      await fs.rm(pending, { force: true });
    } else if (this.fresh) {
      await this.rewrite(0, undefined); // a fresh run replaces an earlier run's output, even with nothing
    }
    this.committedLength = (this.fresh ? 0 : p.baseLength) + p.pendingLength;
    this.fresh = false;
  }

  /** Replaces the file by its first `keep` bytes followed by the contents of `appendFrom`. */
  private async rewrite(keep: number, appendFrom: string | undefined): Promise<void> {
    const tmp = tempPathFor(this.file);
    try {
      if (keep > 0) {
        await fs.copyFile(this.file, tmp);
        await fs.truncate(tmp, keep);
      } else {
        await fs.writeFile(tmp, "");
      }
      if (appendFrom !== undefined) await pipeline(createReadStream(appendFrom), createWriteStream(tmp, { flags: "a" }));
      const handle = await fs.open(tmp, "r+");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(tmp, this.file);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    await fsyncDir(this.dir);
  }

  /** Staging and pending files of an earlier, interrupted run: never committed, so never visible. */
  private async removeLeftovers(): Promise<void> {
    let names: string[];
    try {
      names = await fs.readdir(this.dir);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const prefix = `.${this.base}.`;
    for (const name of names) {
      if (name.startsWith(prefix) && (name === `.${this.base}.staging` || name.startsWith(`${prefix}pending-`) || name.startsWith(`${prefix}tmp-`))) {
        await fs.rm(path.join(this.dir, name), { force: true });
      }
    }
  }

  async close(): Promise<void> {
    const handle = this.staging;
    this.staging = undefined;
    if (handle) {
      await handle.close();
      await fs.rm(this.stagingPath, { force: true });
    }
  }
}
